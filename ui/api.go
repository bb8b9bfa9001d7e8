package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// The read-only JSON API: one document for each page, at /api/v1/ and the
// page's path, with the page's query parameters. It sits behind the same
// token check as the pages (a session cookie or a bearer token), answers
// GET only, and is documented, with a JSON schema for each document, in
// docs/dashboard.md.

// pageError is a page's refusal: its HTTP status and what to say.
type pageError struct {
	code int
	msg  string
}

// errorView is the page of a refusal: the site's page, saying what went
// wrong, with a link home.
type errorView struct {
	layout
	Code    int
	Heading string
	Message string
}

// writePageError answers a page's request with the refusal, as the site's
// page.
func (s *Server) writePageError(w http.ResponseWriter, e *pageError) {
	heading := http.StatusText(e.code)
	if e.code == http.StatusNotFound {
		heading = "Not found"
	}
	s.renderStatus(w, e.code, "error", errorView{layout: s.layout(heading, ""), Code: e.code, Heading: heading, Message: e.msg})
}

// notFound answers a path no page has, and a method no page takes (the
// pages only read).
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.writePageError(w, &pageError{http.StatusMethodNotAllowed, "The dashboard only reads: its pages answer GET."})
		return
	}
	s.writePageError(w, &pageError{http.StatusNotFound, fmt.Sprintf("There is no page at %s.", logPath(r.URL.Path))})
}

// apiError is the JSON document of a refusal.
type apiError struct {
	Error string `json:"error"`
}

// writeJSON answers with v as indented JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeAPIError answers with the refusal as a JSON document.
func writeAPIError(w http.ResponseWriter, e *pageError) {
	writeJSON(w, e.code, apiError{Error: e.msg})
}

func (s *Server) routeAPI() {
	s.mux.HandleFunc("GET /api/v1/fleet", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.fleetData(r))
	})
	s.mux.HandleFunc("GET /api/v1/runs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.runsData(r))
	})
	// A run's document is the one `ccm-orch history show ID --json`
	// prints, rebuilt the same way.
	s.mux.HandleFunc("GET /api/v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		run := s.fleet.index.Run(id)
		if run == nil {
			writeAPIError(w, errNoRun(id))
			return
		}
		writeJSON(w, http.StatusOK, run.Result)
	})
	s.mux.HandleFunc("GET /api/v1/hosts/{id}", func(w http.ResponseWriter, r *http.Request) {
		data, _, perr := s.hostData(r.PathValue("id"))
		if perr != nil {
			writeAPIError(w, perr)
			return
		}
		writeJSON(w, http.StatusOK, data)
	})
	s.mux.HandleFunc("GET /api/v1/drift", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.driftData(r))
	})
	// The assignments' documents are the one `ccm-orch status --json`
	// prints, computed by the same code.
	s.mux.HandleFunc("GET /api/v1/assignments", func(w http.ResponseWriter, r *http.Request) {
		rep, _, err := s.assignmentsData(r)
		if err != nil {
			writeAPIError(w, &pageError{http.StatusInternalServerError, err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, rep)
	})
	s.mux.HandleFunc("GET /api/v1/assignments/{name}", func(w http.ResponseWriter, r *http.Request) {
		rep, perr := s.assignmentData(r.PathValue("name"))
		if perr != nil {
			writeAPIError(w, perr)
			return
		}
		writeJSON(w, http.StatusOK, rep)
	})
	s.mux.HandleFunc("GET /api/v1/services", func(w http.ResponseWriter, r *http.Request) {
		data, perr := s.servicesData(r)
		if perr != nil {
			writeAPIError(w, perr)
			return
		}
		writeJSON(w, http.StatusOK, data)
	})
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeAPIError(w, &pageError{http.StatusMethodNotAllowed, "the dashboard's API is read-only: GET only"})
			return
		}
		writeAPIError(w, &pageError{http.StatusNotFound, "no such document: see docs/dashboard.md for the API"})
	})
}
