// Package pghint adds to a PostgreSQL error what to change in the DSN,
// where lib/pq's own message does not say it: both commands' --db takes
// a postgres:// URL.
package pghint

import (
	"fmt"
	"strings"
)

// Explain returns err with a hint when it is one a DSN change fixes: a
// server without TLS refuses lib/pq's default sslmode (require) with "pq:
// SSL is not enabled on the server". Any other error is returned as it is.
func Explain(err error) error {
	if err != nil && strings.Contains(err.Error(), "SSL is not enabled on the server") {
		return fmt.Errorf("%w (the server does not speak TLS, which lib/pq asks for by default: for a local server, add sslmode=disable to the DSN, such as postgres://user@127.0.0.1:5432/db?sslmode=disable)", err)
	}
	return err
}
