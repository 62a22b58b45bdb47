package extract

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// skippedElements hold no readable text of the document: code, styling,
// navigation, metadata, embedded objects and form controls.
var skippedElements = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Nav: true,
	atom.Noscript: true, atom.Template: true, atom.Svg: true, atom.Iframe: true,
	atom.Object: true, atom.Embed: true, atom.Canvas: true, atom.Select: true,
	atom.Button: true, atom.Input: true, atom.Textarea: true, atom.Datalist: true,
}

// blockElements start and end a paragraph.
var blockElements = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Body: true, atom.Caption: true, atom.Center: true, atom.Dd: true,
	atom.Details: true, atom.Dialog: true, atom.Div: true, atom.Dl: true,
	atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true,
	atom.Footer: true, atom.Form: true, atom.H1: true, atom.H2: true,
	atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Header: true, atom.Hgroup: true, atom.Hr: true, atom.Legend: true,
	atom.Li: true, atom.Main: true, atom.Ol: true, atom.P: true,
	atom.Pre: true, atom.Section: true, atom.Summary: true, atom.Table: true,
	atom.Tbody: true, atom.Tfoot: true, atom.Thead: true, atom.Tr: true,
	atom.Ul: true,
}

// htmlText reduces an HTML document to its readable text: one paragraph per
// block (paragraph, heading, list item, table row...), table cells joined
// with " | ", preformatted text kept as it is.
func htmlText(data []byte) (string, error) {
	decoded, err := decodeHTML(data)
	if err != nil {
		return "", newError(CodeUnreadable, "the HTML cannot be decoded: %v", err)
	}
	doc, err := html.Parse(strings.NewReader(decoded))
	if err != nil {
		return "", newError(CodeUnreadable, "the HTML cannot be parsed: %v", err)
	}
	var w paragraphWriter
	w.walk(doc)
	return w.String(), nil
}

// decodeHTML converts data to UTF-8 using its byte order mark or <meta>
// charset, falling back to UTF-8 when that is valid and Windows-1252 when not.
func decodeHTML(data []byte) (string, error) {
	data = stripUTF16(data)
	enc, _, _ := charset.DetermineEncoding(data, "")
	decoded, err := enc.NewDecoder().Bytes(data)
	if err != nil {
		return "", err
	}
	return string(bytes.TrimPrefix(decoded, utf8BOM)), nil
}

// paragraphWriter collects text into paragraphs, collapsing HTML whitespace.
type paragraphWriter struct {
	done         []string
	current      strings.Builder
	pendingSpace bool
	inPre        int   // depth of <pre>: whitespace is kept as written
	inCell       int   // depth of <td>/<th>: blocks inside a cell stay on the row
	cellsInRow   []int // cells seen so far in each open <tr>, innermost last (tables nest)
}

func (w *paragraphWriter) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
	case html.ElementNode:
		w.element(n)
	case html.DocumentNode:
		w.children(n)
		w.endParagraph()
	}
}

func (w *paragraphWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

func (w *paragraphWriter) element(n *html.Node) {
	if skippedElements[n.DataAtom] || hidden(n) {
		return
	}
	switch n.DataAtom {
	case atom.Br:
		w.lineBreak()
		return
	case atom.Pre:
		w.endParagraph()
		w.inPre++
		w.children(n)
		w.inPre--
		w.endParagraph()
		return
	case atom.Tr:
		w.endParagraph()
		w.cellsInRow = append(w.cellsInRow, 0)
		w.children(n)
		w.cellsInRow = w.cellsInRow[:len(w.cellsInRow)-1]
		w.endParagraph()
		return
	case atom.Td, atom.Th:
		if len(w.cellsInRow) > 0 {
			if w.cellsInRow[len(w.cellsInRow)-1] > 0 {
				if !strings.HasSuffix(w.current.String(), " ") {
					w.current.WriteByte(' ')
				}
				w.current.WriteString("| ")
				w.pendingSpace = false
			}
			w.cellsInRow[len(w.cellsInRow)-1]++
		}
		w.inCell++
		w.children(n)
		w.inCell--
		return
	}
	if blockElements[n.DataAtom] {
		w.endParagraph()
		w.children(n)
		w.endParagraph()
		return
	}
	w.children(n)
}

// hidden reports elements the page does not show.
func hidden(n *html.Node) bool {
	for _, a := range n.Attr {
		switch {
		case a.Key == "hidden":
			return true
		case a.Key == "aria-hidden" && strings.EqualFold(a.Val, "true"):
			return true
		case a.Key == "style":
			style := strings.ReplaceAll(strings.ToLower(a.Val), " ", "")
			if strings.Contains(style, "display:none") || strings.Contains(style, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}

// text adds s, collapsing runs of whitespace to one space; the space is
// written lazily so that it never starts or ends a paragraph and so that
// "a <b>bold</b> word" keeps its spaces while "un<b>bold</b>ed" gains none.
func (w *paragraphWriter) text(s string) {
	if w.inPre > 0 {
		w.current.WriteString(s)
		return
	}
	for _, r := range s {
		if isHTMLSpace(r) {
			w.pendingSpace = w.current.Len() > 0
			continue
		}
		if w.pendingSpace {
			w.current.WriteByte(' ')
			w.pendingSpace = false
		}
		w.current.WriteRune(r)
	}
}

func isHTMLSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\f', '\u00A0':
		return true
	}
	return false
}

func (w *paragraphWriter) lineBreak() {
	if w.inCell > 0 {
		w.pendingSpace = w.current.Len() > 0
		return
	}
	w.current.WriteByte('\n')
	w.pendingSpace = false
}

func (w *paragraphWriter) endParagraph() {
	if w.inCell > 0 {
		w.pendingSpace = w.current.Len() > 0
		return
	}
	if p := strings.TrimSpace(w.current.String()); p != "" {
		w.done = append(w.done, p)
	}
	w.current.Reset()
	w.pendingSpace = false
}

func (w *paragraphWriter) String() string { return strings.Join(w.done, "\n\n") }
