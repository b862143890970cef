package main

import (
	"net/url"
	"strings"
	"testing"
)

// chainSecret stands for an API key in a node URL.
const chainSecret = "K3yZq8secret"

// FuzzParseChains checks that a --chain value never shows a secret in its
// error, however it is mistyped: a key placed beside a /, @, ? or # (in
// the path, userinfo, query or fragment of a URL) stays out of the
// message unless it is the URL's host, which errors show by design; and a
// value that parses names a valid chain.
func FuzzParseChains(f *testing.F) {
	for _, s := range []string{"ETH=http://node", "ETH:https://node/v3", "https://node/v3", "ETH:POL:6=https://node?key",
		"X:USDX:6=https://u:p", "eth=ws://node/", "ETH=ftp://node/", "", "=", "ETH:", "ETH::=http://a"} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, head, tail string) {
		if strings.Contains(head+tail, chainSecret[:4]) {
			return // the input holds the marker itself: nothing to tell apart
		}
		for _, v := range []string{head + "/" + chainSecret + tail, head + chainSecret + "@" + tail,
			head + "?" + chainSecret + tail, head + "#" + chainSecret + tail} {
			got, err := parseChains([]string{v})
			if err != nil {
				_, rpc, _ := strings.Cut(v, "=")
				u, perr := url.Parse(rpc)
				isHost := perr == nil && strings.Contains(u.Host, chainSecret)
				if !isHost && strings.Contains(err.Error(), chainSecret) {
					t.Fatalf("parseChains(%q) shows the secret: %v", v, err)
				}
				continue
			}
			if len(got) != 1 || !chainName.MatchString(got[0].Name) || got[0].Native.Decimals > 77 ||
				(got[0].Native.Symbol != "" && !coinSymbol.MatchString(got[0].Native.Symbol)) {
				t.Fatalf("parseChains(%q) = %+v", v, got)
			}
		}
	})
}
