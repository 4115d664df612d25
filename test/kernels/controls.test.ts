// The contract's controls are wired without a GPU: each names a kernel its family's source in kernels/controls
// names (macros may form the entry), which its built fatbin, where there is one, holds as an entry name; and each
// runs through a case the contract also holds the real kernel to.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { controls } from './support/controls.ts';
import { kernelCases } from './support/kernelCases.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test("every control's kernel is named in its family's source and built fatbin", () => {
  for (const { kernel } of controls) {
    const source = path.join(root, 'kernels/controls', `${kernel.family}.cu`);
    assert.ok(fs.existsSync(source), `${kernel.name}: no kernels/controls/${kernel.family}.cu`);
    const named = new RegExp(`\\b${kernel.name}\\b`);
    assert.match(fs.readFileSync(source, 'utf8'), named, `${kernel.family}.cu never names ${kernel.name}`);
    const fatbin = path.join(root, 'build/kernels', `${kernel.family}.fatbin`);
    if (!fs.existsSync(fatbin)) continue;
    assert.ok(fs.readFileSync(fatbin).includes(`${kernel.name}\0`), `${kernel.family}.fatbin has no ${kernel.name}`);
  }
});

test("every control runs through one of the contract's own cases", () => {
  for (const { kernel, kernelCase } of controls) {
    assert.ok(kernelCases.includes(kernelCase), `${kernel.name} runs through ${kernelCase.name}, not a contract case`);
  }
});
