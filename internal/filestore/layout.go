// Package filestore lays out records in a directory, one file per key,
// for the bus's FileStore: [Dir] keeps the layout, and [Store] puts the
// contract of the bus's Store in front of it.
//
// Invariants:
//   - The file of a key is <kind>/<namespace>/<name>.json under the root,
//     each part escaped (see [Escape]) so that any string maps to one safe
//     file name and back; "_" is the empty namespace, which escaping never
//     produces from a namespace of its own ("_" escapes to "%5F").
//   - A part that escapes to more than [MaxComponent] bytes is named by its
//     hash instead, "~" and 64 hex digits of its SHA-256, which escaping
//     never produces. The key of such a record is kept in a sidecar file,
//     <name>.key beside <name>.json, written before the record and removed
//     after it, so that a sidecar alone is never listed.
//   - Every file is written atomically: a temporary file ".tmp-*" in the
//     same directory, fsync, rename, fsync of the directory. After a crash
//     a record is the old one or the new one; a temporary file left behind
//     is never listed.
//   - The layout is the format on disk: a directory written by one build
//     reads back in every later one (testdata/filestore-v1 of the root
//     package holds one).
package filestore

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
)

// Key identifies a record: the fields of the bus's Key, which converts to
// and from it.
type Key struct {
	Kind      string
	Namespace string
	Name      string
}

// String formats the key as the bus's Key does.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// Compare orders keys by kind, then namespace, then name.
func Compare(a, b Key) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// MaxComponent bounds the bytes of an escaped part of a file path, well
// below the 255 bytes most file systems allow in a file name.
const MaxComponent = 200

// paths returns the record file of key under root, and its sidecar file,
// "" when no part of key is hashed.
func paths(root string, key Key) (record, sidecar string) {
	ns := component(key.Namespace)
	if ns == "" {
		ns = "_"
	}
	kind, name := component(key.Kind), component(key.Name)
	record = filepath.Join(root, kind, ns, name+".json")
	if hashed(kind) || hashed(ns) || hashed(name) {
		sidecar = strings.TrimSuffix(record, ".json") + ".key"
	}
	return record, sidecar
}

// component returns the file name for one part of a key.
func component(s string) string {
	if e := Escape(s); len(e) <= MaxComponent {
		return e
	}
	sum := sha256.Sum256([]byte(s))
	return "~" + hex.EncodeToString(sum[:])
}

// hashed reports whether a file name component is a hash (see component).
func hashed(component string) bool { return strings.HasPrefix(component, "~") }

// keyHeader starts a sidecar file; the kind, namespace and name follow,
// escaped, one a line.
const keyHeader = "opbus key v1"

func encodeKeyFile(key Key) []byte {
	return []byte(keyHeader + "\n" + Escape(key.Kind) + "\n" + Escape(key.Namespace) + "\n" + Escape(key.Name) + "\n")
}

func decodeKeyFile(data []byte) (Key, error) {
	lines := strings.Split(string(data), "\n")
	if len(lines) != 5 || lines[0] != keyHeader || lines[4] != "" {
		return Key{}, fmt.Errorf("expected %q and three lines of kind, namespace and name", keyHeader)
	}
	return Key{Kind: Unescape(lines[1]), Namespace: Unescape(lines[2]), Name: Unescape(lines[3])}, nil
}

// Escape keeps [A-Za-z0-9-] and a '.' that is not leading, and writes
// every other byte as %XX.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || (c == '.' && i > 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// Unescape reverses [Escape]; a '%' that two hex digits do not follow
// stands for itself.
func Unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &c); err == nil {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
