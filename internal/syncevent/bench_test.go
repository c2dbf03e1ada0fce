package syncevent

import (
	"strings"
	"testing"
)

func BenchmarkParse(b *testing.B) {
	body := []byte(`{"id":"6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31","occurredAt":"2026-12-02T14:03:00.250Z","payload":{"items":[` +
		strings.Repeat(`{"done":false,"name":"milk","qty":2,"unit":"l"},`, 16) + `{"name":"eggs","qty":12}],"title":"Groceries"},"type":"note.updated"}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
	}
}
