#!/usr/bin/env node
import { main } from '../cli/main.ts';

process.exitCode = await main(process.argv);
