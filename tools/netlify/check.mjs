// check.mjs FILE: reads a _redirects file with Netlify's own code and
// prints, as JSON on stdout, what Netlify makes of it:
//   {"errors": [...], "rules": N, "dynamic": N, "matches": {PATH: {"to": ..., "status": ...} | null}}
// The paths to match are read from stdin, one a line. netlify-redirect-parser
// (the parser of Netlify's build) validates every line; netlify-redirector
// (the WebAssembly matcher of Netlify's edge, as netlify dev uses it)
// resolves each path the way a deployed site would.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseAllRedirects } from 'netlify-redirect-parser';

const require = createRequire(import.meta.url);
const redirector = require('netlify-redirector');

const file = process.argv[2];
if (!file) {
  console.error('usage: node check.mjs _redirects < paths');
  process.exit(2);
}
const { redirects, errors } = await parseAllRedirects({ redirectsFiles: [file], minimal: true });
const matcher = await redirector.parsePlain(readFileSync(file, 'utf8'), {});
const paths = readFileSync(0, 'utf8').split('\n').filter((l) => l !== '');
const matches = {};
for (const path of paths) {
  const m = matcher.match({ scheme: 'https', host: 'dl.example.com', path, query: '', getHeader: () => '', getCookie: () => '' });
  matches[path] = m ? { to: m.to, status: m.status } : null;
}
const dynamic = redirects.filter((r) => /\/:|\*/.test(r.from)).length;
console.log(JSON.stringify({ errors: errors.map((e) => e.message), rules: redirects.length, dynamic, matches }));
