package store

import (
	"bufio"
	"context"
	"net"
	"time"
)

// pqReadBuffer is the read buffer of a PostgreSQL connection. lib/pq reads
// through a 4 KiB bufio.Reader, a system call for every few rows; a page
// of 50 transactions is ~30 KiB, which this takes in one or two.
const pqReadBuffer = 64 << 10

// pqDialer dials PostgreSQL connections that read through pqReadBuffer.
// It is lib/pq's Dialer and DialerContext.
type pqDialer struct{ d net.Dialer }

func (d pqDialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

func (d pqDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d.DialContext(ctx, network, address)
}

func (d pqDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := d.d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, pqReadBuffer)}, nil
}

// bufferedConn is a connection whose reads go through r. Every read does,
// also once lib/pq's TLS upgrade wraps the connection, so nothing r holds
// is lost.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
