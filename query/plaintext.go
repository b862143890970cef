package query

// PlainText reports whether s is text that JSON (as encoding/json writes
// it) and HTML carry as it is: printable ASCII other than '"', '\\', '<',
// '>' and '&'. The store notes it of a transaction's document when it
// writes it (hashes, addresses, amounts and names almost always are), so
// that a reader writing the transaction out as JSON does not look at
// each of its bytes again.
func PlainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			return false
		}
	}
	return true
}

// plain holds the bytes of plain text.
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
