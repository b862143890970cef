package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
)

// frozenStore is a database whose ping hangs, as a frozen PostgreSQL
// backend's does: it neither answers nor gives up when its context ends.
type frozenStore struct {
	*store.DB
	thaw chan struct{}
}

func (s frozenStore) Ping(ctx context.Context) error {
	<-s.thaw
	return s.DB.Ping(ctx)
}

// TestHealthFrozenDatabase: with the database frozen, /healthz answers
// 503 within its deadline, every probe (it hung until the database
// thawed), and 200 again once it thaws.
func TestHealthFrozenDatabase(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		thaw := make(chan struct{})
		var once sync.Once
		defer once.Do(func() { close(thaw) })
		e := newEnvWith(t, dsn, func(c *api.Config) { c.Store = frozenStore{DB: c.Store.(*store.DB), thaw: thaw} })
		client := &http.Client{Timeout: 10 * time.Second}
		for i := range 3 {
			start := time.Now()
			resp, err := client.Get(e.url + "/healthz")
			if err != nil {
				t.Fatalf("probe %d with the database frozen: %v (no answer within 10 s)", i, err)
			}
			resp.Body.Close()
			if took := time.Since(start); resp.StatusCode != http.StatusServiceUnavailable || took > 4*time.Second {
				t.Fatalf("probe %d with the database frozen: %d after %s, want 503 within the 2 s deadline", i, resp.StatusCode, took)
			}
		}
		once.Do(func() { close(thaw) })
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := client.Get(e.url + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("/healthz after the thaw: %v %v, want 200 within 10 s", resp, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
