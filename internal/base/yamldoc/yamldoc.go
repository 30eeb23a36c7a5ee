// Package yamldoc cuts a YAML stream into its documents and keeps where
// each starts, so that an error in one names the stream's line: the YAML
// parser counts from the document's start, and apimachinery's YAML reader
// forgets where a document began. The configuration files (package
// config) and the manifests directory (package manifests) both read
// through it.
package yamldoc

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
)

// Doc is one document of a stream.
type Doc struct {
	Data []byte
	// Line is the stream's line where the document's content starts,
	// from 1.
	Line int
}

// Split cuts data at its "---" lines ("---" alone, or followed by a
// comment). Every document is returned, empty ones too (see Empty): a
// caller numbering documents decides which count.
func Split(data []byte) []Doc {
	docs := []Doc{{Line: 1}}
	n := 0
	for l := range bytes.Lines(data) {
		n++
		if rest, ok := bytes.CutPrefix(l, []byte("---")); ok {
			if t := bytes.TrimSpace(rest); len(t) == 0 || t[0] == '#' {
				docs = append(docs, Doc{Line: n + 1})
				continue
			}
		}
		d := &docs[len(docs)-1]
		d.Data = append(d.Data, l...)
	}
	return docs
}

// Empty reports whether the document holds only blank and comment lines.
func (d Doc) Empty() bool {
	for l := range bytes.Lines(d.Data) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

var lineRef = regexp.MustCompile(`line (\d+)`)

// AbsoluteLines rewrites each "line N" of a YAML parser's message about
// the document, which counts from the document's start, into the
// stream's line.
func (d Doc) AbsoluteLines(msg string) string {
	return lineRef.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(lineRef.FindStringSubmatch(m)[1])
		if err != nil {
			return m
		}
		return fmt.Sprintf("line %d", n+d.Line-1)
	})
}
