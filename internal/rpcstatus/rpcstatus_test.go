package rpcstatus_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/wharfhq/wharf/internal/rpcstatus"
)

func TestMapping(t *testing.T) {
	for _, tt := range []struct {
		code   rpcstatus.Code
		name   string
		status int
	}{
		{rpcstatus.InvalidArgument, "InvalidArgument", 400},
		{rpcstatus.NotFound, "NotFound", 404},
		{rpcstatus.PermissionDenied, "PermissionDenied", 403},
		{rpcstatus.ResourceExhausted, "ResourceExhausted", 429},
		{rpcstatus.OutOfRange, "OutOfRange", 400},
		{rpcstatus.Unimplemented, "Unimplemented", 501},
		{rpcstatus.Internal, "Internal", 500},
		{rpcstatus.Unavailable, "Unavailable", 503},
		{rpcstatus.Unauthenticated, "Unauthenticated", 401},
		{rpcstatus.Code(0), "OK", 500},
		{rpcstatus.Code(4), "DeadlineExceeded", 500},
		{rpcstatus.Code(15), "DataLoss", 500},
		{rpcstatus.Code(17), "Code(17)", 500},
		{rpcstatus.Code(-1), "Code(-1)", 500},
	} {
		if got := tt.code.String(); got != tt.name {
			t.Errorf("Code(%d).String() = %q, want %q", tt.code, got, tt.name)
		}
		if got := tt.code.HTTPStatus(); got != tt.status {
			t.Errorf("Code(%d).HTTPStatus() = %d, want %d", tt.code, got, tt.status)
		}
	}
}

// TestStringIsGRPCs holds every status string to the form the spec writes
// and Go's gRPC prints: codes.Code.String.
func TestStringIsGRPCs(t *testing.T) {
	for c := codes.Code(0); c <= 17; c++ {
		if got, want := rpcstatus.Code(c).String(), c.String(); got != want {
			t.Errorf("Code(%d).String() = %q, want %q", c, got, want)
		}
	}
}
