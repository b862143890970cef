// Package rpcstatus is the google.rpc.Code vocabulary both servers answer
// errors in: the codes, their names (the "status" of an error body) and
// grpc-gateway's mapping of each to an HTTP status.
package rpcstatus

import (
	"net/http"
	"strconv"
)

// Code is a google.rpc.Code, the "code" of an error body.
type Code int

// The codes wharf and addrd answer with.
const (
	InvalidArgument   Code = 3
	DeadlineExceeded  Code = 4
	NotFound          Code = 5
	AlreadyExists     Code = 6
	PermissionDenied  Code = 7
	ResourceExhausted Code = 8
	OutOfRange        Code = 11
	Unimplemented     Code = 12
	Internal          Code = 13
	Unavailable       Code = 14
	Unauthenticated   Code = 16
)

// names is the one table of status strings: every google.rpc.Code by
// number, spelt as the address-data spec writes them, which is how Go's
// gRPC prints them (codes.Code.String).
var names = [...]string{
	0:  "OK",
	1:  "Canceled",
	2:  "Unknown",
	3:  "InvalidArgument",
	4:  "DeadlineExceeded",
	5:  "NotFound",
	6:  "AlreadyExists",
	7:  "PermissionDenied",
	8:  "ResourceExhausted",
	9:  "FailedPrecondition",
	10: "Aborted",
	11: "OutOfRange",
	12: "Unimplemented",
	13: "Internal",
	14: "Unavailable",
	15: "DataLoss",
	16: "Unauthenticated",
}

// String is the code's name, the "status" of an error body, e.g. NotFound;
// Code(N) for a number that is no google.rpc.Code, as gRPC prints it.
func (c Code) String() string {
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// HTTPStatus is grpc-gateway's HTTP status for the code; 500 for others.
func (c Code) HTTPStatus() int {
	switch c {
	case InvalidArgument, OutOfRange:
		return http.StatusBadRequest
	case NotFound:
		return http.StatusNotFound
	case AlreadyExists:
		return http.StatusConflict
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
