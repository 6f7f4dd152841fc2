#!/usr/bin/env node
import { main } from '../localstack/cli/main.ts';

process.exitCode = await main(process.argv);
