package testenv

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	_ "github.com/lib/pq" // the PostgreSQL driver the product uses
)

// cluster is one throwaway PostgreSQL cluster per test binary.
type cluster struct {
	once sync.Once
	port int
	dir  string
	err  error
	seq  atomic.Int64
	// maxConns is the cluster's max_connections; 0 means 200.
	maxConns int
	stop     func()
}

var pg cluster

// Postgres returns the DSN of a fresh, empty database in a throwaway
// PostgreSQL cluster (initdb + pg_ctl on a free loopback port, under a
// temp dir). The cluster is shared by the tests of one binary and stopped
// by Main; each call gets its own database. Skips or fails as Need when
// PostgreSQL is not installed.
func Postgres(tb testing.TB) string {
	tb.Helper()
	pg.once.Do(func() { pg.err = pg.start(tb) })
	Need(tb, "PostgreSQL", pg.err)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), pg.seq.Add(1))
	db, err := sql.Open("postgres", pg.dsn("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	return pg.dsn(name)
}

// PostgresPort is the port of the shared cluster (after Postgres was called),
// for tests that stop and start it.
func PostgresPort() int { return pg.port }

func (c *cluster) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// pgBin finds a PostgreSQL server program: on PATH or under /usr/lib/postgresql/*/bin.
func pgBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) == 0 {
		return "", fmt.Errorf("%s: %w (apt-get install postgresql)", name, errNotFound)
	}
	return matches[len(matches)-1], nil
}

// asPostgres runs a server program, as the postgres user when we are root
// (PostgreSQL refuses to run as root).
func asPostgres(prog string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", prog}, args...)...)
	}
	return exec.Command(prog, args...)
}

// PostgresLimited returns the DSN of a database in a PostgreSQL cluster
// of its own that accepts at most maxConnections connections, stopped when
// the test ends: for tests of what a server does at that limit.
func PostgresLimited(tb testing.TB, maxConnections int) string {
	tb.Helper()
	c := &cluster{maxConns: maxConnections}
	err := c.start(tb)
	Need(tb, "PostgreSQL", err)
	if err == nil {
		tb.Cleanup(c.stop)
	}
	return c.dsn("postgres")
}

func (c *cluster) start(tb testing.TB) error {
	initdb, err := pgBin("initdb")
	if err != nil {
		return err
	}
	pgctl, err := pgBin("pg_ctl")
	if err != nil {
		return err
	}
	c.dir, err = os.MkdirTemp("", "wharf-pg-")
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root needs a postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			return err
		}
	}
	data := filepath.Join(c.dir, "data")
	if out, err := asPostgres(initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, out)
	}
	c.port = FreePort(tb)
	maxConns := c.maxConns
	if maxConns == 0 {
		maxConns = 200
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=%d", c.port, c.dir, maxConns)
	if c.maxConns != 0 {
		opts += " -c max_wal_senders=0" // must be fewer than max_connections
	}
	logf := filepath.Join(c.dir, "log")
	if out, err := asPostgres(pgctl, "-D", data, "-o", opts, "-l", logf, "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(logf)
		return fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
	}
	var once sync.Once
	c.stop = func() {
		once.Do(func() {
			_ = asPostgres(pgctl, "-D", data, "-m", "immediate", "-w", "stop").Run()
			os.RemoveAll(c.dir)
		})
	}
	atExit(c.stop)
	return nil
}

// StopPostgres and StartPostgres stop and restart the shared cluster, for
// tests of a database that goes away and comes back. The stop is "fast":
// connections are cut at once, but the WAL is flushed, so commits the
// cluster acknowledged (with synchronous_commit=off) survive the restart.
func StopPostgres(tb testing.TB) {
	tb.Helper()
	pgCtl(tb, "-m", "fast", "-w", "stop")
}

// StartPostgres restarts the shared cluster after StopPostgres.
func StartPostgres(tb testing.TB) {
	tb.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", pg.port, pg.dir)
	pgCtl(tb, "-o", opts, "-l", filepath.Join(pg.dir, "log"), "-w", "-t", "60", "start")
}

func pgCtl(tb testing.TB, args ...string) {
	tb.Helper()
	pgctl, err := pgBin("pg_ctl")
	if err != nil {
		tb.Fatal(err)
	}
	args = append([]string{"-D", filepath.Join(pg.dir, "data")}, args...)
	if out, err := asPostgres(pgctl, args...).CombinedOutput(); err != nil {
		tb.Fatalf("pg_ctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
