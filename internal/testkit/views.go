package testkit

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// openBoltReadOnly opens a bbolt file for reading. It fails the test when
// the file cannot be opened within a few seconds (another handle holds it).
func openBoltReadOnly(t testing.TB, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("opening %s read-only: %v", path, err)
	}
	return db
}

// CheckBolt runs bbolt's consistency check on the file at path and fails the
// test on any error it reports. The file must not be open elsewhere.
func CheckBolt(t testing.TB, path string) {
	t.Helper()
	db := openBoltReadOnly(t, path)
	defer db.Close()
	err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check of %s: %v", path, err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("bbolt check of %s: %v", path, err)
	}
}

// DumpBolt returns every key and value of every top-level bucket of the
// bbolt file at path, by bucket name and key. The file must not be open
// elsewhere.
func DumpBolt(t testing.TB, path string) map[string]map[string]string {
	t.Helper()
	db := openBoltReadOnly(t, path)
	defer db.Close()
	dump := map[string]map[string]string{}
	err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			kv := map[string]string{}
			dump[string(name)] = kv
			return b.ForEach(func(k, v []byte) error {
				kv[string(k)] = string(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatalf("dumping %s: %v", path, err)
	}
	return dump
}
