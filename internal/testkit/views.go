package testkit

import (
	"bytes"
	"fmt"
	"os"
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

// PutBolt writes value under key in a top-level bucket of the bbolt file at
// path, bypassing whatever wrote the file: a way to damage a record that
// only decoding it can tell. The file must not be open elsewhere.
func PutBolt(t testing.TB, path, bucket, key string, value []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("no bucket %s", bucket)
		}
		return b.Put([]byte(key), value)
	})
	if err != nil {
		t.Fatalf("writing %s/%q in %s: %v", bucket, key, path, err)
	}
}

// BoltPageSize returns the page size of the bbolt file at path.
func BoltPageSize(t testing.TB, path string) int {
	t.Helper()
	db := openBoltReadOnly(t, path)
	defer db.Close()
	return db.Info().PageSize
}

// LiveBoltOffset returns the offset, in the bbolt file at path, of needle on
// a leaf page that the file uses: copies of older versions of a record
// linger on freed pages, and damaging one of those changes nothing. It
// fails the test when no page in use holds needle.
func LiveBoltOffset(t testing.TB, path string, needle []byte) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("opening %s read-only: %v", path, err)
	}
	defer db.Close()
	size := db.Info().PageSize
	found := int64(-1)
	err = db.View(func(tx *bolt.Tx) error {
		for at := 0; found < 0; {
			i := bytes.Index(data[at:], needle)
			if i < 0 {
				return nil
			}
			off := at + i
			at = off + 1
			page, err := tx.Page(off / size)
			if err != nil {
				return err
			}
			if page != nil && page.Type == "leaf" {
				found = int64(off)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the pages of %s: %v", path, err)
	}
	if found < 0 {
		t.Fatalf("no leaf page in use in %s holds %q", path, needle)
	}
	return found
}

// FlipBit inverts the bits of mask in the byte at off of the file at path.
func FlipBit(t testing.TB, path string, off int64, mask byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatalf("reading byte %d of %s: %v", off, path, err)
	}
	b[0] ^= mask
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatalf("writing byte %d of %s: %v", off, path, err)
	}
}
