package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Media types the server reads and writes.
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// output is what a client accepts: a serializer and, optionally, a
// transformation of the object into meta.k8s.io Table or PartialObjectMetadata.
type output struct {
	mediaType string
	info      runtime.SerializerInfo
	// as is "", "Table", "PartialObjectMetadata" or "PartialObjectMetadataList".
	as string
}

// negotiateOutput picks the first acceptable media type in the Accept header.
// allowAs lists the transformations the endpoint can produce.
func (c *codecs) negotiateOutput(r *http.Request, allowAs ...string) (output, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = mediaJSON
	}
	for _, rng := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(rng))
		if err != nil {
			continue
		}
		switch mt {
		case "*/*", "application/*":
			mt = mediaJSON
		}
		info, ok := c.serializerFor(mt)
		if !ok {
			continue
		}
		as := params["as"]
		if mt == mediaProtobuf && as == "" && jsonOnly(r) {
			continue
		}
		if as != "" {
			if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "") || !contains(allowAs, as) {
				continue
			}
			if mt == mediaProtobuf && as == "Table" {
				continue
			}
		}
		return output{mediaType: mt, info: info, as: as}, nil
	}
	return output{}, statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf (and as=Table or as=PartialObjectMetadata where the endpoint offers them)")
}

// decoderFor returns the serializer for a request body's Content-Type.
func (c *codecs) decoderFor(r *http.Request) (string, runtime.SerializerInfo, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = mediaJSON
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil {
		if info, ok := c.serializerFor(mt); ok {
			return mt, info, nil
		}
	}
	return "", runtime.SerializerInfo{}, statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		fmt.Sprintf("the body of the request was in an unknown format %q: accepted media types include application/json, application/yaml, application/vnd.kubernetes.protobuf", ct))
}

func (c *codecs) serializerFor(mediaType string) (runtime.SerializerInfo, bool) {
	for _, info := range c.factory.SupportedMediaTypes() {
		if info.MediaType == mediaType {
			return info, true
		}
	}
	return runtime.SerializerInfo{}, false
}

func statusError(code int32, reason metav1.StatusReason, message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message}}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
