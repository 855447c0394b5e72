package apiserver

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// continueToken is the opaque metadata.continue of a paginated list: the
// revision the first page was read at and the key to resume from, relative to
// the resource's key prefix.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	Start      string `json:"start"`
}

const continueVersion = "meta.k8s.io/v1"

func encodeContinue(revision int64, start string) string {
	data, _ := json.Marshal(continueToken{APIVersion: continueVersion, Revision: revision, Start: start})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(token string) (continueToken, error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return continueToken{}, badRequest("the continue token is not valid (not base64): start the list again without it")
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil || t.APIVersion != continueVersion {
		return continueToken{}, badRequest("the continue token is not valid: start the list again without it")
	}
	if strings.Contains(t.Start, "..") || strings.HasPrefix(t.Start, "/") {
		return continueToken{}, badRequest("the continue token is not valid (bad start key): start the list again without it")
	}
	return t, nil
}
