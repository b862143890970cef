#!/usr/bin/env bash
# skipped.sh REPORT: the end of make test. REPORT holds a line
# "WHAT<TAB>TEST" for every test that skipped because WHAT was missing
# (internal/testenv writes them). Sum them up by the Debian package that
# provides WHAT, and print the one command that installs them all.
set -euo pipefail
report=${1:?usage: skipped.sh REPORT}
[ -s "$report" ] || { echo "make test: nothing skipped for a missing part."; exit 0; }

# What the tests look for -> the Debian package that has it ("" when it
# is not a Debian package; the reason is printed instead).
package() {
	case $1 in
	openssl | dash | bash | busybox | curl | shellcheck | tar | wrk | caddy | nginx | chromium) echo "$1" ;;
	cmp) echo diffutils ;;
	runuser) echo util-linux ;;
	sha256sum) echo coreutils ;;
	node) echo nodejs ;;
	PostgreSQL) echo postgresql ;;
	*) echo "" ;;
	esac
}

declare -A tests_of=() other=()
while IFS=$'\t' read -r what test; do
	pkg=$(package "$what")
	if [ -n "$pkg" ]; then
		tests_of[$pkg]+="${tests_of[$pkg]:+, }$test"
	else
		other[$what]+="${other[$what]:+, }$test"
	fi
done < <(sort -u "$report")

echo
if [ ${#tests_of[@]} -gt 0 ]; then
	echo "make test: tests skipped for a missing Debian package:"
	for pkg in $(printf '%s\n' "${!tests_of[@]}" | sort); do
		echo "  $pkg: ${tests_of[$pkg]}"
	done
	echo "Install them with:"
	echo "  sudo apt-get install -y $(printf '%s\n' "${!tests_of[@]}" | sort | tr '\n' ' ' | sed 's/ $//')"
fi
if [ ${#other[@]} -gt 0 ]; then
	echo "make test: skipped for another reason:"
	for what in $(printf '%s\n' "${!other[@]}" | sort | tr ' ' '\001'); do
		what=${what//$'\001'/ }
		case $what in
		MinIO | cosign | geth) hint="make tools builds it" ;;
		"Netlify's redirect packages") hint="make netlify installs them" ;;
		*) hint="" ;;
		esac
		echo "  $what${hint:+ ($hint)}: ${other[$what]}"
	done
fi
