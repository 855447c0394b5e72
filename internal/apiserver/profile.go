package apiserver

import (
	"net/http"
	"net/http/pprof"
)

// serveProfile answers /debug/pprof/... with Go's runtime profiles (the
// index, cmdline, profile, symbol, trace and the named ones such as heap and
// goroutine), as upstream's apiserver does with --profiling.
func serveProfile(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/debug/pprof":
		http.Redirect(w, r, "/debug/pprof/", http.StatusMovedPermanently)
	case "/debug/pprof/cmdline":
		pprof.Cmdline(w, r)
	case "/debug/pprof/profile":
		pprof.Profile(w, r)
	case "/debug/pprof/symbol":
		pprof.Symbol(w, r)
	case "/debug/pprof/trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r) // the index, or the named profile after the prefix
	}
}
