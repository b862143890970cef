package evm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
)

// TestProbeInternals: the Reader names the trace API the node serves (the
// dev chain's callTracer); over a Source that cannot trace it fails with
// chain.ErrNotImplemented, saying which trace APIs it looked for, as the
// fetcher passes it on to the operator.
func TestProbeInternals(t *testing.T) {
	ctx := t.Context()
	src := devchaintest.Dial(t, devchaintest.Start(t, devchain.Config{}))
	api, err := evm.NewReader(src).ProbeInternals(ctx)
	if err != nil || api != query.TraceCallTracer {
		t.Errorf("ProbeInternals on the dev chain = %q, %v; want %s", api, err, query.TraceCallTracer)
	}
	api, err = evm.NewReader(struct{ query.Source }{src}).ProbeInternals(ctx)
	if !errors.Is(err, chain.ErrNotImplemented) || api != "" {
		t.Fatalf("ProbeInternals without a trace API = %q, %v; want chain.ErrNotImplemented", api, err)
	}
	for _, want := range []string{query.TraceCallTracer, query.TraceParity} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ProbeInternals' error %q does not name %s", err, want)
		}
	}
}
