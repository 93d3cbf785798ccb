// pinned.mjs: check that an npm install took every package from the
// lockfile, for the lockfiles that npm ci refuses (see install.sh: those
// that record one platform's optional binaries only, which npm install
// takes and npm ci does not).
//
//   node pinned.mjs LOCKFILE DIR
//
// DIR/node_modules/.package-lock.json is npm's record of what it installed.
// Every package there must be in LOCKFILE at the same path, with the same
// version and integrity (npm checked the tarball against the latter), and
// every package of LOCKFILE that is not optional must have been installed.
// Optional ones may be absent: another platform's, or one whose install
// failed, which npm allows for optional packages. Exit 1, naming each
// difference, when the install is not the lockfile's; 2 on bad arguments.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [lockfile, dir] = process.argv.slice(2);
if (!lockfile || !dir) {
  console.error("usage: node pinned.mjs LOCKFILE DIR");
  process.exit(2);
}
const read = (file) => {
  try {
    return JSON.parse(readFileSync(file, "utf8")).packages ?? {};
  } catch (err) {
    console.error(`pinned.mjs: ${file}: ${err.message}`);
    process.exit(1);
  }
};
const locked = read(lockfile);
const hidden = join(dir, "node_modules", ".package-lock.json");
const installed = read(hidden);

const wrong = [];
for (const [path, got] of Object.entries(installed)) {
  if (path === "") continue; // the root project, not a package
  const want = locked[path];
  if (!want) {
    wrong.push(`${path}@${got.version}: installed, but not in the lockfile`);
  } else if (got.version !== want.version || got.integrity !== want.integrity) {
    wrong.push(`${path}: installed ${got.version} (${got.integrity}), the lockfile has ${want.version} (${want.integrity})`);
  }
}
for (const [path, want] of Object.entries(locked)) {
  if (path !== "" && !want.optional && !installed[path]) {
    wrong.push(`${path}@${want.version}: in the lockfile, but not installed`);
  }
}
if (wrong.length > 0) {
  console.error(`pinned.mjs: ${dir} is not what ${lockfile} pins:`);
  for (const w of wrong) console.error(`  ${w}`);
  console.error("pinned.mjs: regenerate the lockfile (npm install --package-lock-only in its directory) or fix the registry, then run install.sh again");
  process.exit(1);
}
