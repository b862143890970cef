package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/query"
)

// fetchReads are the FetchStore methods that write nothing; every other
// method is a write and must be fenced.
var fetchReads = map[string]bool{
	"Tracked": true, "Backfills": true, "Checkpoint": true, "StoredBlock": true, "StatementHeads": true, "StatementBounds": true,
	"ChainStop": true, "BalancesPending": true,
	// The lease's own methods check it themselves.
	"AcquireLease": true, "RenewLease": true, "ReleaseLease": true, "ChainLease": true,
}

// TestFetchWritesFenced: every write of the FetchStore made under a lease
// that is gone fails with ErrLeaseLost. A new FetchStore method is a
// write unless listed in fetchReads, so a write that escapes the store's
// transaction helper (and with it the fence) fails here.
func TestFetchWritesFenced(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		db := open(t, dsn)
		ctx := context.Background()
		l, held, err := db.AcquireLease(ctx, "ETH", "a:1", ttl)
		if err != nil || !held {
			t.Fatalf("AcquireLease: %v, %v", held, err)
		}
		if err := db.ExpireLease(ctx, "ETH"); err != nil {
			t.Fatal(err)
		}
		lost := reflect.ValueOf(query.WithLease(ctx, l))
		store := reflect.ValueOf(db)
		fs := reflect.TypeFor[query.FetchStore]()
		for i := range fs.NumMethod() {
			m := fs.Method(i)
			if fetchReads[m.Name] {
				continue
			}
			t.Run(m.Name, func(t *testing.T) {
				method := store.MethodByName(m.Name)
				args := []reflect.Value{lost}
				for j := 1; j < method.Type().NumIn(); j++ {
					args = append(args, sample(method.Type().In(j), 0))
				}
				if method.Type().NumIn() > 1 && method.Type().In(1).Kind() == reflect.String {
					args[1] = reflect.ValueOf("ETH") // the chain
				}
				out := method.Call(args)
				err, _ := out[len(out)-1].Interface().(error)
				if !errors.Is(err, query.ErrLeaseLost) {
					t.Errorf("%s under a lost lease = %v, want ErrLeaseLost (a write outside the store's tx helper?)", m.Name, err)
				}
			})
		}
	})
}

// sample is an argument for a write that passes the checks made before
// the transaction: -1 for a signed argument, "0" for strings (a decimal, and a chain name for the
// lease's chain is given first), one element for slices (so that no
// write returns early for want of input), structs filled alike.
func sample(t reflect.Type, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString("0")
	case reflect.Int, reflect.Int64:
		if depth == 0 {
			v.SetInt(-1) // a position "before" any: StoreBackfill's next, say
		}
	case reflect.Slice:
		if depth < 3 {
			v = reflect.MakeSlice(t, 1, 1)
			v.Index(0).Set(sample(t.Elem(), depth+1))
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Type.PkgPath() != "time" {
				v.Field(i).Set(sample(f.Type, depth+1))
			}
		}
	}
	return v
}
