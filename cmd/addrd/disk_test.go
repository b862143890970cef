package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query/store"
)

// TestFullDisk: on a full disk (SQLite's database may not grow), reads
// answer (the page-token key was written at start, not on the first
// read that needs it), and a PUT that needs room answers 503, code 14,
// for the client to retry, not 500. The key was created on first use,
// and a full disk was 500 code 13.
func TestFullDisk(t *testing.T) {
	ctx := context.Background()
	dir := smallDisk(t)
	path := filepath.Join(dir, "addrd.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := startServe(t, "--db", path, "--chain", "ETH=http://127.0.0.1:1", "--fetch=false")
	var secrets int
	if err := db.Bun().NewRaw("SELECT count(*) FROM secrets WHERE name = 'page-token'").Scan(ctx, &secrets); err != nil || secrets != 1 {
		t.Fatalf("page-token secrets at start: %d (%v), want 1: written before the first read", secrets, err)
	}
	k, secret, err := db.CreateAPIKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	key := k.ID + ":" + secret
	for i := range 3 {
		if status, body := srv.do(t, key, "PUT", fmt.Sprintf("/v1/chains/ETH/addresses/0x%040x", i+1)); status != 200 {
			t.Fatalf("PUT %d: %d %s", i, status, body)
		}
	}
	// Fill the disk.
	ballast, err := os.Create(filepath.Join(dir, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := ballast.Write(chunk); err != nil {
			break
		}
	}
	ballast.Close()
	refused := false
	for i := range 5000 {
		status, body := srv.do(t, key, "PUT", fmt.Sprintf("/v1/chains/ETH/addresses/0x%040x", i+100))
		if status == 200 {
			continue
		}
		var e struct{ Code int }
		if json.Unmarshal(body, &e); status != 503 || e.Code != 14 {
			t.Fatalf("PUT on a full disk: %d %s, want 503 code 14", status, body)
		}
		refused = true
		break
	}
	if !refused {
		t.Fatal("5000 PUTs on a full disk passed")
	}
	if status, body := srv.do(t, key, "GET", "/v1/addresses?page_size=1"); status != 200 {
		t.Fatalf("GET on a full disk: %d %s, want 200", status, body)
	}
}

// smallDisk mounts a 4 MiB tmpfs for the test, unmounted at its end.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a small tmpfs (the test needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// TestFullDiskHealth: when the disk fills under a fetching replica,
// /healthz is degraded naming the disk.
func TestFullDiskHealth(t *testing.T) {
	dir := smallDisk(t)
	srv := startServe(t, "--dev", "--db", filepath.Join(dir, "addrd.db"))
	// A fetching replica first: one whose disk fills before it ever holds
	// the lease says that no replica has fetched yet.
	eventually(t, 30*time.Second, "fetching", func() bool {
		_, body := srv.do(t, "", "GET", "/healthz")
		var h struct {
			Chains map[string]struct {
				ThisReplica bool   `json:"this_replica"`
				StoredHead  uint64 `json:"stored_head"`
			}
		}
		json.Unmarshal(body, &h)
		return h.Chains["ETH"].ThisReplica && h.Chains["ETH"].StoredHead > 0
	})
	ballast, err := os.Create(filepath.Join(dir, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := ballast.Write(chunk); err != nil {
			break
		}
	}
	ballast.Close()
	var last []byte
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last /healthz: %s", last)
		}
	})
	eventually(t, 30*time.Second, "degraded naming the disk", func() bool {
		_, body := srv.do(t, "", "GET", "/healthz")
		last = body
		var h healthz
		json.Unmarshal(body, &h)
		return h.Status == "degraded" && strings.Contains(h.Fetch["ETH"], "disk is full")
	})
}
