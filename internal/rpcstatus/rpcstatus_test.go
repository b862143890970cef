package rpcstatus_test

import (
	"testing"

	"github.com/wharfhq/wharf/internal/rpcstatus"
)

func TestMapping(t *testing.T) {
	for _, tt := range []struct {
		code   rpcstatus.Code
		name   string
		status int
	}{
		{rpcstatus.InvalidArgument, "INVALID_ARGUMENT", 400},
		{rpcstatus.NotFound, "NOT_FOUND", 404},
		{rpcstatus.PermissionDenied, "PERMISSION_DENIED", 403},
		{rpcstatus.ResourceExhausted, "RESOURCE_EXHAUSTED", 429},
		{rpcstatus.Unimplemented, "UNIMPLEMENTED", 501},
		{rpcstatus.Internal, "INTERNAL", 500},
		{rpcstatus.Unavailable, "UNAVAILABLE", 503},
		{rpcstatus.Unauthenticated, "UNAUTHENTICATED", 401},
		{rpcstatus.Code(99), "UNKNOWN", 500},
	} {
		if got := tt.code.String(); got != tt.name {
			t.Errorf("Code(%d).String() = %q, want %q", tt.code, got, tt.name)
		}
		if got := tt.code.HTTPStatus(); got != tt.status {
			t.Errorf("Code(%d).HTTPStatus() = %d, want %d", tt.code, got, tt.status)
		}
	}
}
