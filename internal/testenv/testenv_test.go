package testenv_test

import (
	"database/sql"
	"net/http"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestPostgres(t *testing.T) {
	a, b := testenv.Postgres(t), testenv.Postgres(t)
	if a == b {
		t.Fatalf("two calls gave the same database %s", a)
	}
	db, err := sql.Open("postgres", a)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}

func TestPostgresStopStart(t *testing.T) {
	dsn := testenv.Postgres(t)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testenv.StopPostgres(t)
	if err := db.Ping(); err == nil {
		t.Fatal("ping succeeded with the cluster stopped")
	}
	testenv.StartPostgres(t)
	if err := db.Ping(); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}
}

func TestMinIO(t *testing.T) {
	m := testenv.NewMinIO(t)
	live := func() error {
		resp, err := http.Get(m.URL() + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := live(); err != nil {
		t.Fatalf("live: %v", err)
	}
	m.Kill()
	if err := live(); err == nil {
		t.Fatal("minio answered after Kill")
	}
	if err := m.Start(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := live(); err != nil {
		t.Fatalf("live after restart: %v", err)
	}
}
