#!/bin/sh
# skipped.sh REPORT: the end of make test. REPORT holds a line
# "WHAT<TAB>TEST" for every test that skipped because WHAT was missing
# (internal/testenv writes them). Sum them up by the Debian package that
# provides WHAT, and print the one command that installs them all.
set -eu
report=${1:?usage: skipped.sh REPORT}
if [ ! -s "$report" ]; then
	echo "make test: nothing skipped for a missing part."
	exit 0
fi
sort -u "$report" | awk -F '\t' '
# What the tests look for -> the Debian package that has it; "" when it
# is not a Debian package (the reason is printed instead).
function pkg(what) {
	if (what ~ /^(openssl|dash|bash|busybox|curl|shellcheck|tar|wrk|caddy|nginx|chromium|litecoind)$/) return what
	if (what == "cmp") return "diffutils"
	if (what == "runuser") return "util-linux"
	if (what == "sha256sum") return "coreutils"
	if (what == "node") return "nodejs"
	if (what == "PostgreSQL") return "postgresql"
	return ""
}
{
	p = pkg($1)
	if (p != "") { sep = (p in tests) ? ", " : ""; tests[p] = tests[p] sep $2; npkg++ }
	else { sep = ($1 in other) ? ", " : ""; other[$1] = other[$1] sep $2; nother++ }
}
END {
	print ""
	if (npkg) {
		print "make test: tests skipped for a missing Debian package:"
		n = 0
		for (p in tests) names[++n] = p
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (names[j] < names[i]) { t = names[i]; names[i] = names[j]; names[j] = t }
		cmd = ""
		for (i = 1; i <= n; i++) { print "  " names[i] ": " tests[names[i]]; cmd = cmd " " names[i] }
		print "Install them with:"
		print "  sudo apt-get install -y" cmd
	}
	if (nother) {
		print "make test: skipped for another reason:"
		for (w in other) {
			hint = ""
			if (w == "MinIO" || w == "cosign" || w == "geth" || w == "btcd" || w == "op-geth" || w == "anvil") hint = " (make tools builds it)"
			if (w == "Netlify'"'"'s redirect packages") hint = " (make netlify installs them)"
			print "  " w hint ": " other[w]
		}
	}
}'
