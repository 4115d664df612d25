#!/usr/bin/env node
// Entry point for the installed `drama3` command: runs the TypeScript CLI through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
