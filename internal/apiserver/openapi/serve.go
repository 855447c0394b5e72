package openapi

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/munnerz/goautoneg"
)

// Media types of the documents. kubectl asks for the v2 document only as
// protobuf (the "@" spelling) and for v3 documents as JSON; both spellings of
// the protobuf types are accepted and the "." one is returned, as upstream does.
const (
	mediaJSON          = "application/json"
	mediaV2Proto       = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mediaV2ProtoLegacy = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mediaV3Proto       = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	mediaV3ProtoLegacy = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
)

var _ http.Handler = (*Documents)(nil)

// ServeHTTP serves GET and HEAD of /openapi/v2, /openapi/v3 and
// /openapi/v3/<group version path>, with ETags (If-None-Match gives 304).
// A v3 request whose ?hash= is not the current one is redirected to the
// current URL; one with the current hash may be cached for good.
func (d *Documents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "only GET and HEAD are allowed on OpenAPI documents", http.StatusMethodNotAllowed)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/openapi/v2":
		d.serveDocument(w, r, d.v2, mediaV2Proto, mediaV2ProtoLegacy)
	case path == "/openapi/v3":
		w.Header().Set("Content-Type", mediaJSON)
		w.Header().Set("Etag", strconv.Quote(hash(d.v3Root)))
		http.ServeContent(w, r, "", d.modified, bytes.NewReader(d.v3Root))
	case strings.HasPrefix(path, "/openapi/v3/"):
		gvPath := strings.TrimPrefix(path, "/openapi/v3/")
		doc, ok := d.v3[gvPath]
		if !ok {
			http.Error(w, "no OpenAPI document for "+strconv.Quote(gvPath), http.StatusNotFound)
			return
		}
		if h := r.URL.Query().Get("hash"); h != "" {
			if h != doc.hash() {
				http.Redirect(w, r, "/openapi/v3/"+gvPath+"?hash="+doc.hash(), http.StatusMovedPermanently)
				return
			}
			w.Header().Set("Cache-Control", "public, immutable")
			w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
		}
		d.serveDocument(w, r, doc, mediaV3Proto, mediaV3ProtoLegacy)
	default:
		http.NotFound(w, r)
	}
}

// serveDocument writes doc as JSON or protobuf, whichever the Accept header prefers.
func (d *Documents) serveDocument(w http.ResponseWriter, r *http.Request, doc *document, protoTypes ...string) {
	w.Header().Add("Vary", "Accept")
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, offer := range append([]string{mediaJSON}, protoTypes...) {
			typ, sub, _ := strings.Cut(offer, "/")
			if (clause.Type != typ && clause.Type != "*") || (clause.SubType != sub && clause.SubType != "*") {
				continue
			}
			data, etag := doc.json, doc.hash()
			contentType := mediaJSON
			if offer != mediaJSON {
				var err error
				if data, etag, err = doc.protobuf(); err != nil {
					http.Error(w, "converting the OpenAPI document to protobuf: "+err.Error(), http.StatusInternalServerError)
					return
				}
				contentType = protoTypes[0]
			}
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Etag", strconv.Quote(etag))
			http.ServeContent(w, r, "", d.modified, bytes.NewReader(data))
			return
		}
	}
	http.Error(w, "acceptable media types: "+strings.Join(append([]string{mediaJSON}, protoTypes...), ", "), http.StatusNotAcceptable)
}
