package pghint_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/pghint"
)

func TestExplain(t *testing.T) {
	ssl := errors.New("pq: SSL is not enabled on the server")
	if got := pghint.Explain(ssl); !errors.Is(got, ssl) || !strings.Contains(got.Error(), "add sslmode=disable to the DSN") {
		t.Errorf("Explain(%v) = %v, want it wrapped with the sslmode hint", ssl, got)
	}
	other := errors.New("pq: password authentication failed")
	if got := pghint.Explain(other); got != other {
		t.Errorf("Explain(%v) = %v, want it as it is", other, got)
	}
	if pghint.Explain(nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}
