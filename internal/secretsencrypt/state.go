// Package secretsencrypt is the cluster's managed encryption at rest
// (orch server --secrets-encryption, orch secrets-encrypt): the
// EncryptionConfiguration every server uses (upstream's format and
// providers), the stage of a key rotation, the sealed record etcd keeps
// them in, and the re-encryption of stored values with the current key.
//
// A rotation goes as k3s's does: prepare adds a new key that only reads,
// rotate makes it the one that writes, reencrypt rewrites every stored
// value with it and drops the old key. Each step waits until every server
// uses the configuration of the step before.
package secretsencrypt

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
)

// The stages of a rotation, named as k3s names them.
const (
	StageStart             = "start"
	StagePrepare           = "prepare"
	StageRotate            = "rotate"
	StageReencryptFinished = "reencrypt_finished"
)

// The providers a managed configuration may use.
const (
	ProviderAESCBC    = "aescbc"
	ProviderSecretbox = "secretbox"
)

// State is the cluster's managed encryption: the configuration and the
// stage of the current (or last) rotation.
type State struct {
	Config apiserverv1.EncryptionConfiguration `json:"config"`
	Stage  string                              `json:"stage"`
}

// New is a first configuration: Secrets encrypted with a new key of
// provider, and read as plain text too (identity), so that Secrets stored
// before encryption was on stay readable until they are rewritten.
func New(provider string, now time.Time, random io.Reader) (State, error) {
	var first apiserverv1.ProviderConfiguration
	key, err := newKey(provider, now, random)
	if err != nil {
		return State{}, err
	}
	switch provider {
	case ProviderAESCBC:
		first.AESCBC = &apiserverv1.AESConfiguration{Keys: []apiserverv1.Key{key}}
	case ProviderSecretbox:
		first.Secretbox = &apiserverv1.SecretboxConfiguration{Keys: []apiserverv1.Key{key}}
	default:
		return State{}, fmt.Errorf("unknown secrets encryption provider %q (use %s or %s)", provider, ProviderAESCBC, ProviderSecretbox)
	}
	cfg := apiserverv1.EncryptionConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1.SchemeGroupVersion.String(), Kind: "EncryptionConfiguration"},
		Resources: []apiserverv1.ResourceConfiguration{{
			Resources: []string{"secrets"},
			Providers: []apiserverv1.ProviderConfiguration{first, {Identity: &apiserverv1.IdentityConfiguration{}}},
		}},
	}
	return State{Config: cfg, Stage: StageStart}, nil
}

// newKey is a random 32-byte key, named after the provider and the time.
func newKey(provider string, now time.Time, random io.Reader) (apiserverv1.Key, error) {
	secret := make([]byte, 32)
	if _, err := io.ReadFull(random, secret); err != nil {
		return apiserverv1.Key{}, err
	}
	return apiserverv1.Key{Name: provider + "key-" + now.UTC().Format("20060102T150405Z"), Secret: base64.StdEncoding.EncodeToString(secret)}, nil
}

// keys is the key list of the configuration's first provider (the one
// that writes) and that provider's name; nil when it has none (identity
// first: encryption is off).
func (s *State) keys() (*[]apiserverv1.Key, string) {
	if len(s.Config.Resources) == 0 || len(s.Config.Resources[0].Providers) == 0 {
		return nil, ""
	}
	p := s.Config.Resources[0].Providers[0]
	switch {
	case p.AESCBC != nil:
		return &p.AESCBC.Keys, ProviderAESCBC
	case p.Secretbox != nil:
		return &p.Secretbox.Keys, ProviderSecretbox
	}
	return nil, ""
}

// Keys names the keys of the writing provider, the one that writes
// first: "aescbc:aescbckey-…".
func (s State) Keys() []string {
	keys, provider := s.keys()
	if keys == nil {
		return nil
	}
	var out []string
	for _, k := range *keys {
		out = append(out, provider+":"+k.Name)
	}
	return out
}

func (s State) clone() State {
	out := State{Stage: s.Stage}
	s.Config.DeepCopyInto(&out.Config)
	return out
}

// Prepare adds a new key after the current one: every server can read
// values written with it before any writes one.
func (s State) Prepare(now time.Time, random io.Reader) (State, error) {
	if s.Stage != StageStart && s.Stage != StageReencryptFinished {
		return s, fmt.Errorf("prepare follows start or reencrypt_finished, and the stage is %s", s.Stage)
	}
	next := s.clone()
	keys, provider := next.keys()
	if keys == nil {
		return s, fmt.Errorf("the configuration's first provider is not %s or %s", ProviderAESCBC, ProviderSecretbox)
	}
	key, err := newKey(provider, now, random)
	if err != nil {
		return s, err
	}
	// Names are by the second: a key made in the same second as one that
	// exists (the one --secrets-encryption made at the first start, say)
	// gets a suffix.
	taken := func(name string) bool {
		return slices.ContainsFunc(*keys, func(k apiserverv1.Key) bool { return k.Name == name })
	}
	for n, base := 2, key.Name; taken(key.Name); n++ {
		key.Name = fmt.Sprintf("%s-%d", base, n)
	}
	*keys = append(*keys, key)
	next.Stage = StagePrepare
	return next, nil
}

// Rotate makes the key Prepare added the one that writes.
func (s State) Rotate() (State, error) {
	if s.Stage != StagePrepare {
		return s, fmt.Errorf("rotate follows prepare, and the stage is %s", s.Stage)
	}
	next := s.clone()
	keys, _ := next.keys()
	if keys == nil || len(*keys) < 2 {
		return s, fmt.Errorf("there is no prepared key to rotate to")
	}
	last := (*keys)[len(*keys)-1]
	*keys = append([]apiserverv1.Key{last}, (*keys)[:len(*keys)-1]...)
	next.Stage = StageRotate
	return next, nil
}

// Finish drops every key but the one that writes, once every value was
// rewritten with it.
func (s State) Finish() (State, error) {
	if s.Stage != StageRotate {
		return s, fmt.Errorf("reencrypt follows rotate, and the stage is %s", s.Stage)
	}
	next := s.clone()
	keys, _ := next.keys()
	if keys == nil {
		return s, fmt.Errorf("the configuration's first provider is not %s or %s", ProviderAESCBC, ProviderSecretbox)
	}
	*keys = (*keys)[:1]
	next.Stage = StageReencryptFinished
	return next, nil
}

// File is the configuration as upstream's --encryption-provider-config
// file (JSON, which is YAML too).
func (s State) File() ([]byte, error) {
	return json.MarshalIndent(s.Config, "", "  ")
}

// Hash identifies the configuration (not the stage): servers publish the
// hash of the one they use, and a step waits until all agree.
func (s State) Hash() string {
	data, _ := json.Marshal(s.Config)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
