// Compiles chains/contracts/src with the pinned solc (tools/package.json) into one JSON artifact per
// contract in chains/contracts/artifacts: abi, bytecode, deployedBytecode, and the compiler used.
// `make contracts` runs it; CI fails when the committed artifacts differ from what it produces.
import { createRequire } from "node:module";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const require = createRequire(join(root, "tools", "package.json"));
const solc = require("solc");
const nodeModules = join(root, "tools", "node_modules");

const EVM_VERSION = "cancun";

function sources(dir) {
  const found = {};
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) Object.assign(found, sources(path));
    else if (name.endsWith(".sol")) found[relative(here, path)] = { content: readFileSync(path, "utf8") };
  }
  return found;
}

function findImports(path) {
  try {
    return { contents: readFileSync(join(nodeModules, path), "utf8") };
  } catch {
    return { error: `not found: ${path}` };
  }
}

const input = {
  language: "Solidity",
  sources: sources(join(here, "src")),
  settings: {
    evmVersion: EVM_VERSION,
    optimizer: { enabled: true, runs: 200 },
    metadata: { bytecodeHash: "none", appendCBOR: false },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
const errors = (output.errors || []).filter((e) => e.severity === "error");
for (const e of output.errors || []) console.error(e.formattedMessage);
if (errors.length) process.exit(1);

const out = join(here, "artifacts");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
let count = 0;
for (const [source, contracts] of Object.entries(output.contracts)) {
  if (!source.startsWith("src/")) continue; // libraries compiled along, not artifacts of ours
  for (const [name, compiled] of Object.entries(contracts)) {
    const artifact = {
      contractName: name,
      sourceName: source,
      compiler: { solc: solc.version(), evmVersion: EVM_VERSION, optimizerRuns: 200 },
      abi: compiled.abi,
      bytecode: "0x" + compiled.evm.bytecode.object,
      deployedBytecode: "0x" + compiled.evm.deployedBytecode.object,
    };
    writeFileSync(join(out, `${name}.json`), JSON.stringify(artifact, null, 2) + "\n");
    count++;
  }
}
console.log(`compiled ${count} contracts with solc ${solc.version()} into ${relative(root, out)}`);
