package idempotency

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// realisticBody is a sync event of about size bytes: the payload is a
// document of notes with nested objects, arrays, numbers, escapes and
// non-ASCII text, the shape an offline-first notes app queues.
func realisticBody(size int) []byte {
	head := `{"id":"6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31","type":"notes.synced","occurredAt":"2026-12-02T14:03:00.250Z",` +
		`"payload":{"device":"iPhone15,2","notes":[`
	const tail = `]}}`
	var b strings.Builder
	b.WriteString(head)
	for i := 0; b.Len()+len(tail) < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"noteId":"n-%06d","title":"Groceries \u00e9t\u00e9 #%d","body":"milk, eggs\nand \"fresh\" bread — ça va","tags":["home","shop",%q],`+
			`"checked":%t,"position":{"x":%d.5,"y":-%d.25,"z":1e-3},"revision":%d,"updatedAt":"2026-12-02T14:%02d:00.%03dZ","attachments":[]}`,
			i, i, fmt.Sprint("t", i%7), i%2 == 0, i*3, i, i*11, i%60, i%1000)
	}
	b.WriteString(tail)
	return []byte(b.String())
}

var sizes = []struct {
	name string
	n    int
}{{"1KB", 1 << 10}, {"64KB", 64 << 10}, {"1MB", 1 << 20}}

// BenchmarkHash compares the payload hash with its floor (SHA-256 of the
// same bytes) and with a plain encoding/json decode and re-encode.
func BenchmarkHash(b *testing.B) {
	for _, sz := range sizes {
		body := realisticBody(sz.n)
		b.Run(sz.name+"/canonical-sha256", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := PayloadHash(body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sz.name+"/raw-sha256", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				sha256.Sum256(body)
			}
		})
		b.Run(sz.name+"/encoding-json-roundtrip", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var v any
				if err := json.Unmarshal(body, &v); err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
