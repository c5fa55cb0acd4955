package projector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// bbolt reads its pages through unsafe pointers, trusting what they say: a
// damaged page header or element makes it read outside the file (a fault,
// which kills the process where it is not recovered, as in tx.Check's own
// goroutine), build slices that point into the Go heap (which kills the
// process at the next garbage collection), or descend a cycle forever.
// None of that can be recovered, so before bbolt walks the file, the
// checks below read its pages with ReadAt, as bbolt lays them out (file
// format version 2, unchanged since boltdb), and check what bbolt trusts.
// They cost about as much as reading the file.

// Layout of a page: a 16-byte header, then count 16-byte elements, whose
// keys and values follow, at offsets relative to each element.
const (
	pageHeaderSize  = 16
	pageElementSize = 16
	// leafBucketFlag marks a leaf element whose value is a bucket: a
	// 16-byte header (root page id, sequence), then, for an inline bucket
	// (root 0), the bucket's only page.
	leafBucketFlag   = 0x01
	bucketHeaderSize = 16
	pageLeafFlag     = 0x02
	// Offsets in a meta page of the root bucket's page id and of the
	// transaction id.
	metaRootOffset = pageHeaderSize + 16
	metaTxidOffset = pageHeaderSize + 48
)

var order = binary.NativeEndian // bbolt writes its structures in the machine's byte order

// pageHead is a page in use that checkPageHeaders found.
type pageHead struct {
	id       int
	typ      string // meta, freelist, branch or leaf
	overflow int
}

// checkPageHeaders reads the header of every page below the high water
// mark, in file order, and returns those in use, in that order. In a sound
// file each page is free, or is a meta, freelist, branch or leaf page
// followed by its overflow pages, which all lie below the mark. bbolt
// trusts those headers: tx.Check, for one, loops over a page's overflow
// count, so a flipped high bit there would keep it busy for hours.
func checkPageHeaders(tx *bolt.Tx) ([]pageHead, error) {
	var heads []pageHead
	last := int(tx.Size() / int64(tx.DB().Info().PageSize))
	for id := 0; id < last; {
		page, err := tx.Page(id)
		if err != nil {
			return nil, err
		}
		if page == nil {
			break
		}
		switch page.Type {
		case "free":
			id++
		case "meta", "freelist", "branch", "leaf":
			if page.OverflowCount < 0 || page.OverflowCount >= last-id {
				return nil, fmt.Errorf("page %d (%s) claims %d overflow pages, past the last page, %d", id, page.Type, page.OverflowCount, last-1)
			}
			heads = append(heads, pageHead{id: id, typ: page.Type, overflow: page.OverflowCount})
			id += 1 + page.OverflowCount
		default:
			return nil, fmt.Errorf("page %d has no page type bbolt knows: %s", id, page.Type)
		}
	}
	return heads, nil
}

// checkTree reads every branch and leaf page of heads (checkPageHeaders)
// from file and checks that every key and value lies within its page, and
// that the pages their elements point to (children of branch pages, roots
// of buckets) make a tree from the root that tx's meta page names: each a
// branch or leaf page in use, pointed to once, so that there is no cycle.
func checkTree(tx *bolt.Tx, file *os.File, heads []pageHead) error {
	size := tx.DB().Info().PageSize
	root, err := metaRoot(file, size, uint64(tx.ID()))
	if err != nil {
		return err
	}
	// points[id] lists the pages that page id points to; a page is in it
	// when it is a branch or leaf page in use.
	points := map[uint64][]uint64{}
	r := pageReader{file: file, size: size}
	for _, h := range heads {
		if h.typ != "branch" && h.typ != "leaf" {
			continue
		}
		page, err := r.read(h)
		if err != nil {
			return err
		}
		to, err := checkPage(page, h.typ == "branch", nil)
		if err != nil {
			return fmt.Errorf("page %d: %w", h.id, err)
		}
		points[uint64(h.id)] = to
	}
	if _, ok := points[root]; !ok {
		return fmt.Errorf("the meta page names page %d as the root, which is not a branch or leaf page in use", root)
	}
	seen := map[uint64]bool{root: true}
	for stack := []uint64{root}; len(stack) > 0; {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, to := range points[id] {
			if _, ok := points[to]; !ok {
				return fmt.Errorf("page %d points to page %d, which is not a branch or leaf page in use", id, to)
			}
			if seen[to] {
				return fmt.Errorf("page %d points to page %d, which another page points to too", id, to)
			}
			seen[to] = true
			stack = append(stack, to)
		}
	}
	return nil
}

// checkPage checks the elements of one page, or of an inline bucket's
// page, and appends the pages they point to to to.
func checkPage(page []byte, branch bool, to []uint64) ([]uint64, error) {
	if len(page) < pageHeaderSize {
		return nil, fmt.Errorf("%d bytes long", len(page))
	}
	count := int(order.Uint16(page[10:]))
	if pageHeaderSize+count*pageElementSize > len(page) {
		return nil, fmt.Errorf("%d elements claimed, more than the page holds", count)
	}
	end := uint64(len(page))
	for i := range count {
		e := pageHeaderSize + i*pageElementSize
		elem := page[e : e+pageElementSize]
		if branch {
			pos, ksize := order.Uint32(elem), order.Uint32(elem[4:])
			if uint64(e)+uint64(pos)+uint64(ksize) > end {
				return nil, fmt.Errorf("element %d: the key lies outside the page", i)
			}
			to = append(to, order.Uint64(elem[8:]))
			continue
		}
		flags, pos, ksize, vsize := order.Uint32(elem), order.Uint32(elem[4:]), order.Uint32(elem[8:]), order.Uint32(elem[12:])
		key := uint64(e) + uint64(pos)
		if key+uint64(ksize)+uint64(vsize) > end {
			return nil, fmt.Errorf("element %d: the key or value lies outside the page", i)
		}
		if flags&leafBucketFlag == 0 {
			continue
		}
		value := page[key+uint64(ksize) : key+uint64(ksize)+uint64(vsize)]
		if len(value) < bucketHeaderSize {
			return nil, fmt.Errorf("element %d: a bucket of %d bytes", i, len(value))
		}
		if root := order.Uint64(value); root != 0 {
			to = append(to, root)
			continue
		}
		inline := value[bucketHeaderSize:]
		if len(inline) < pageHeaderSize || order.Uint16(inline[8:])&pageLeafFlag == 0 {
			return nil, fmt.Errorf("element %d: the inline bucket's page is not a leaf page", i)
		}
		var err error
		if to, err = checkPage(inline, false, to); err != nil {
			return nil, fmt.Errorf("element %d, an inline bucket: %w", i, err)
		}
	}
	return to, nil
}

// pageReader reads pages in file order through a window of the file, a
// few reads for the whole file rather than one a page.
type pageReader struct {
	file   *os.File
	size   int
	window []byte
	start  int64 // offset of window in the file
}

const pageWindow = 1 << 20

// read returns page h, valid until the next read.
func (r *pageReader) read(h pageHead) ([]byte, error) {
	from, n := int64(h.id)*int64(r.size), int64(1+h.overflow)*int64(r.size)
	if from < r.start || from+n > r.start+int64(len(r.window)) {
		r.start = from
		r.window = r.window[:cap(r.window)]
		if int64(len(r.window)) < max(n, pageWindow) {
			r.window = make([]byte, max(n, pageWindow))
		}
		got, err := r.file.ReadAt(r.window, from)
		if got < int(n) {
			return nil, fmt.Errorf("reading page %d: %w", h.id, err)
		}
		r.window = r.window[:got]
	}
	return r.window[from-r.start : from-r.start+n], nil
}

// metaRoot returns the root bucket's page id that the meta page of
// transaction txid (the one bbolt chose) names.
func metaRoot(file *os.File, size int, txid uint64) (uint64, error) {
	meta := make([]byte, metaTxidOffset+8)
	for page := range 2 {
		if _, err := file.ReadAt(meta, int64(page*size)); err != nil {
			return 0, fmt.Errorf("reading meta page %d: %w", page, err)
		}
		if order.Uint64(meta[metaTxidOffset:]) == txid {
			return order.Uint64(meta[metaRootOffset:]), nil
		}
	}
	return 0, errors.New("no meta page is of the transaction bbolt opened")
}
