// Package rpcstatus is the google.rpc.Code vocabulary both servers answer
// errors in: the codes, their names (the "status" of an error body) and
// grpc-gateway's mapping of each to an HTTP status.
package rpcstatus

import "net/http"

// Code is a google.rpc.Code, the "code" of an error body.
type Code int

// The codes wharf and addrd answer with.
const (
	InvalidArgument   Code = 3
	NotFound          Code = 5
	PermissionDenied  Code = 7
	ResourceExhausted Code = 8
	Unimplemented     Code = 12
	Internal          Code = 13
	Unavailable       Code = 14
	Unauthenticated   Code = 16
)

// String is the code's name, e.g. NOT_FOUND; UNKNOWN for other codes.
func (c Code) String() string {
	switch c {
	case InvalidArgument:
		return "INVALID_ARGUMENT"
	case NotFound:
		return "NOT_FOUND"
	case PermissionDenied:
		return "PERMISSION_DENIED"
	case ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case Unimplemented:
		return "UNIMPLEMENTED"
	case Internal:
		return "INTERNAL"
	case Unavailable:
		return "UNAVAILABLE"
	case Unauthenticated:
		return "UNAUTHENTICATED"
	}
	return "UNKNOWN"
}

// HTTPStatus is grpc-gateway's HTTP status for the code; 500 for others.
func (c Code) HTTPStatus() int {
	switch c {
	case InvalidArgument:
		return http.StatusBadRequest
	case NotFound:
		return http.StatusNotFound
	case PermissionDenied:
		return http.StatusForbidden
	case ResourceExhausted:
		return http.StatusTooManyRequests
	case Unimplemented:
		return http.StatusNotImplemented
	case Unavailable:
		return http.StatusServiceUnavailable
	case Unauthenticated:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}
