#!/usr/bin/env node
import { main } from '../lib/cli/main.ts';

process.exitCode = await main(process.argv);
