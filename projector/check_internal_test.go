package projector

import (
	"flag"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var flipSeed = flag.Uint64("flipseed", 0, "seed of TestRandomBitFlipsNeverStopOpen (0: from the clock)")

// Whatever bit of a views file flips, Open neither fails nor crashes nor
// hangs: it sets the file aside or accepts it, and a file it accepts can be
// read through, every bucket and record. (A flip it accepts may still have
// changed a record: bbolt keeps no checksum of data pages.) Before
// checkPageHeaders and checkTree, about one flip in a few thousand made
// bbolt fault in tx.Check's goroutine, corrupt the heap or loop.
func TestRandomBitFlipsNeverStopOpen(t *testing.T) {
	t.Parallel()
	seed := *flipSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -flipseed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))

	sound := filepath.Join(t.TempDir(), "views.db")
	buildRuns(t, sound, 300)
	data, err := os.ReadFile(sound)
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	flips := 100
	if testing.Short() {
		flips = 50
	}
	var setAside int
	var sum byte // of every byte read, so that the reads happen
	for range flips {
		path := filepath.Join(t.TempDir(), "views.db")
		damaged := append([]byte(nil), data...)
		off, bit := r.IntN(len(damaged)), r.IntN(8)
		damaged[off] ^= 1 << bit
		if err := os.WriteFile(path, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := openViews(path, time.Second, discard)
		if err != nil {
			t.Fatalf("byte %d, bit %d: %v", off, bit, err)
		}
		err = db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
				return b.ForEach(func(k, v []byte) error {
					for _, c := range k {
						sum += c
					}
					for _, c := range v {
						sum += c
					}
					return nil
				})
			})
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("byte %d, bit %d: reading the file Open accepted: %v", off, bit, err)
		}
		if aside, _ := filepath.Glob(path + damagedSuffix + "*"); len(aside) > 0 {
			setAside++
		}
	}
	t.Logf("%d flips, %d files set aside (checksum %d)", flips, setAside, sum)
}
