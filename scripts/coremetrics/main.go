// Command coremetrics measures the shape of a Go package — by default the
// root package of this repository — with go/ast, so that the figures of the
// core's structure (issue 32) are counted, not estimated:
//
//   - its non-test lines (every line of its non-test files, as wc -l counts);
//   - where it uses sync.Cond (the type or sync.NewCond);
//   - every function or method longer than 80 lines, from its func keyword
//     to its closing brace, and the longest of all;
//   - the number of fields of its Bus struct;
//   - the bool (and atomic.Bool) fields of its keyState struct, each with the owner its own
//     comment names ("owned by X" or "owner: X"), and the owner named by
//     the comment that opens its section of the struct (the nearest comment
//     above a field, at or above it).
//
// Usage, from the repository's root:
//
//	go run ./scripts/coremetrics [-max 80] [dir]
//
// The files measured are those go/build selects for the current platform,
// less the _test.go files.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Func is a function or method of the package and its length in lines.
type Func struct {
	Name  string // "f", or "Recv.f" for a method
	File  string
	Line  int
	Lines int
}

// Flag is a bool field of keyState.
type Flag struct {
	Name    string
	Type    string // "bool" or "atomic.Bool"
	Owner   string // named by the field's own comment; "" if none
	Section string // named by the nearest comment above it that names an owner; "" if none
}

// Metrics are the figures of one package.
type Metrics struct {
	Dir       string
	Files     int
	Lines     int      // non-test lines
	Conds     []string // file:line of each use of sync.Cond or sync.NewCond
	Long      []Func   // functions over the limit, longest first
	Longest   Func     // the longest function
	BusFields int      // -1 when the package has no struct Bus
	Flags     []Flag   // nil when the package has no struct keyState
	HasKS     bool
}

// Measure measures the package in dir; functions longer than max lines
// are listed.
func Measure(dir string, max int) (*Metrics, error) {
	pkg, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, fmt.Errorf("coremetrics: reading package %s: %w", dir, err)
	}
	m := &Metrics{Dir: dir, BusFields: -1}
	fset := token.NewFileSet()
	for _, name := range pkg.GoFiles {
		path := filepath.Join(dir, name)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("coremetrics: %w", err)
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("coremetrics: %w", err)
		}
		m.Files++
		m.Lines += countLines(src)
		m.measureFile(fset, f, name, max)
	}
	sort.SliceStable(m.Long, func(i, j int) bool {
		if m.Long[i].Lines != m.Long[j].Lines {
			return m.Long[i].Lines > m.Long[j].Lines
		}
		return m.Long[i].Name < m.Long[j].Name
	})
	return m, nil
}

// countLines counts lines as wc -l does, plus a last line without its
// newline.
func countLines(src []byte) int {
	n := strings.Count(string(src), "\n")
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

func (m *Metrics) measureFile(fset *token.FileSet, f *ast.File, name string, max int) {
	syncName := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "sync" {
			syncName = "sync"
			if imp.Name != nil {
				syncName = imp.Name.Name
			}
		}
	}
	if syncName != "" && syncName != "_" {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == syncName && (sel.Sel.Name == "Cond" || sel.Sel.Name == "NewCond") {
				m.Conds = append(m.Conds, fmt.Sprintf("%s:%d", name, fset.Position(sel.Pos()).Line))
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			fn := Func{
				Name:  funcName(d),
				File:  name,
				Line:  fset.Position(d.Type.Func).Line,
				Lines: fset.Position(d.End()).Line - fset.Position(d.Type.Func).Line + 1,
			}
			if fn.Lines > m.Longest.Lines {
				m.Longest = fn
			}
			if fn.Lines > max {
				m.Long = append(m.Long, fn)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				switch ts.Name.Name {
				case "Bus":
					m.BusFields = countFields(st)
				case "keyState":
					m.HasKS = true
					m.Flags = boolFields(st)
				}
			}
		}
	}
}

func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + d.Name.Name
		}
		return d.Name.Name
	}
}

// countFields counts the fields of st: each name of a multi-name field,
// and each embedded field, once.
func countFields(st *ast.StructType) int {
	n := 0
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			n++
		}
		n += len(f.Names)
	}
	return n
}

// ownerRE finds the owner a comment names: the word after "owned by" or
// "owner:" (a queue, a pass, a write stage: one word by convention).
var ownerRE = regexp.MustCompile(`(?i)\b(?:owned by|owner:)\s*(?:the\s+)?([\pL\pN_-]+)`)

// owner returns the owner a comment names, or "".
func owner(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	if s := ownerRE.FindStringSubmatch(cg.Text()); s != nil {
		return strings.Join(strings.Fields(s[1]), " ")
	}
	return ""
}

// boolType returns "bool" or "atomic.Bool" for those types, else "".
func boolType(t ast.Expr) string {
	switch t := t.(type) {
	case *ast.Ident:
		if t.Name == "bool" {
			return "bool"
		}
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok && x.Name == "atomic" && t.Sel.Name == "Bool" {
			return "atomic.Bool"
		}
	}
	return ""
}

func boolFields(st *ast.StructType) []Flag {
	flags := []Flag{}
	section := ""
	for _, f := range st.Fields.List {
		own := owner(f.Doc)
		if own == "" {
			own = owner(f.Comment)
		}
		if f.Doc != nil {
			// a comment above a field opens a section: the fields up
			// to the next such comment have the owner it names, if any
			section = owner(f.Doc)
		}
		typ := boolType(f.Type)
		if typ == "" {
			continue
		}
		for _, n := range f.Names {
			flags = append(flags, Flag{Name: n.Name, Type: typ, Owner: own, Section: section})
		}
	}
	return flags
}

// Print writes m as a table.
func (m *Metrics) Print(w io.Writer, max int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "package\t%s (%d files)\n", m.Dir, m.Files)
	fmt.Fprintf(tw, "non-test lines\t%d\n", m.Lines)
	conds := "no"
	if len(m.Conds) > 0 {
		conds = fmt.Sprintf("yes, %d uses: %s", len(m.Conds), strings.Join(m.Conds, " "))
	}
	fmt.Fprintf(tw, "sync.Cond\t%s\n", conds)
	fmt.Fprintf(tw, "functions over %d lines\t%d\n", max, len(m.Long))
	for _, f := range m.Long {
		fmt.Fprintf(tw, "  %s\t%d  (%s:%d)\n", f.Name, f.Lines, f.File, f.Line)
	}
	if m.Longest.Lines > 0 {
		fmt.Fprintf(tw, "longest function\t%s, %d lines\n", m.Longest.Name, m.Longest.Lines)
	}
	if m.BusFields >= 0 {
		fmt.Fprintf(tw, "Bus fields\t%d\n", m.BusFields)
	} else {
		fmt.Fprintf(tw, "Bus fields\tno struct Bus\n")
	}
	if !m.HasKS {
		fmt.Fprintf(tw, "keyState bool fields\tno struct keyState\n")
		return tw.Flush()
	}
	named := 0
	for _, f := range m.Flags {
		if f.Owner != "" {
			named++
		}
	}
	fmt.Fprintf(tw, "keyState bool fields\t%d (%d with an owner on the field)\n", len(m.Flags), named)
	for _, f := range m.Flags {
		own, sec := f.Owner, f.Section
		if own == "" {
			own = "-"
		}
		if sec == "" {
			sec = "-"
		}
		fmt.Fprintf(tw, "  %s %s\towner: %s; section: %s\n", f.Name, f.Type, own, sec)
	}
	return tw.Flush()
}

func main() {
	max := flag.Int("max", 80, "list the functions longer than this many lines")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: coremetrics [-max lines] [dir]")
		flag.PrintDefaults()
	}
	flag.Parse()
	dir := "."
	switch flag.NArg() {
	case 0:
	case 1:
		dir = flag.Arg(0)
	default:
		flag.Usage()
		os.Exit(2)
	}
	m, err := Measure(dir, *max)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := m.Print(os.Stdout, *max); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
