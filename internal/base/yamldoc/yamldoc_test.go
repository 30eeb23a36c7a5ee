package yamldoc

import (
	"testing"
)

func TestSplit(t *testing.T) {
	stream := "# head\n---\na: 1\n--- # second\nb: 2\n---x: not a separator\n---\n# only a comment\n---\r\nc: 3\n"
	docs := Split([]byte(stream))
	want := []struct {
		data  string
		line  int
		empty bool
	}{
		{"# head\n", 1, true},
		{"a: 1\n", 3, false},
		{"b: 2\n---x: not a separator\n", 5, false},
		{"# only a comment\n", 8, true},
		{"c: 3\n", 10, false},
	}
	if len(docs) != len(want) {
		t.Fatalf("%d documents, want %d: %+v", len(docs), len(want), docs)
	}
	for i, w := range want {
		if string(docs[i].Data) != w.data || docs[i].Line != w.line || docs[i].Empty() != w.empty {
			t.Errorf("document %d: %q line %d empty %v, want %q line %d empty %v", i+1, docs[i].Data, docs[i].Line, docs[i].Empty(), w.data, w.line, w.empty)
		}
	}
	if got := docs[2].AbsoluteLines("yaml: line 2: mapping values are not allowed; line 1"); got != "yaml: line 6: mapping values are not allowed; line 5" {
		t.Errorf("AbsoluteLines: %q", got)
	}
}
