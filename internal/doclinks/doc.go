// Package doclinks checks the project's Markdown documents (README.md and
// docs/*.md): every relative link and image must name a file that exists,
// and every #anchor a heading of the page it points at, spelt the way
// GitHub makes heading anchors. Links inside code are not links and are
// left alone; links to other sites are not followed.
package doclinks
