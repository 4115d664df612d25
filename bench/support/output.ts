// What every GPU bench ends with: a markdown table on stdout and a JSON report in the output directory (argv[2]).
import fs from 'node:fs';
import path from 'node:path';

/** The lines of a markdown table: the header, the separator, one line per row of cells. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), `|${header.map(() => '---').join('|')}|`, ...rows.map(line)];
}

/** The output directory named by argv[2], or the working directory. */
export function outputDirectory(): string {
  return path.resolve(process.argv[2] ?? '.');
}

/** Writes `report` as indented JSON to `fileName` in the output directory, creating the directory. */
export function writeReport(fileName: string, report: unknown): string {
  const directory = outputDirectory();
  fs.mkdirSync(directory, { recursive: true });
  const file = path.join(directory, fileName);
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
