package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"orch/internal/fsutil"
	"os"
)

// ServiceAccountKeyFile holds the key that signs service account tokens
// (upstream's sa.key). It is an RSA 2048 key, so tokens are RS256 as most
// clients expect.
const ServiceAccountKeyFile = "service-account.key"

// serviceAccountKeyBits is the size of the RSA key Ensure creates.
const serviceAccountKeyBits = 2048

// ensureServiceAccountKey loads the token signing key from b.Dir, or creates
// it when the file does not exist. The key is kept for the life of the
// cluster: replacing it invalidates every token handed out.
func (b *Bundle) ensureServiceAccountKey() error {
	path := b.Path(ServiceAccountKeyFile)
	keyPEM, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err := rsa.GenerateKey(randReader, serviceAccountKeyBits)
		if err != nil {
			return fmt.Errorf("generate the service account signing key: %w", err)
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
		if err := fsutil.WriteFileAtomic(path, keyPEM, 0o600); err != nil {
			return err
		}
		b.ServiceAccountKey, b.ServiceAccountKeyPEM = key, keyPEM
		return nil
	}
	if err != nil {
		return fmt.Errorf("read service account signing key %q: %w (check the permissions of --data-dir)", path, err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("service account signing key %q is unreadable: %w (restore it from a backup, or remove it to "+
			"create a new one: every service account token handed out so far then stops working)", path, err)
	}
	if err := checkServiceAccountKey(key); err != nil {
		return fmt.Errorf("service account signing key %q: %w (remove it to create a new one: every service account token "+
			"handed out so far then stops working)", path, err)
	}
	b.ServiceAccountKey, b.ServiceAccountKeyPEM = key, keyPEM
	return nil
}

// checkServiceAccountKey accepts the keys upstream signs tokens with: RSA of
// at least 2048 bits (RS256) or ECDSA (ES256/384/512).
func checkServiceAccountKey(key crypto.Signer) error {
	switch k := key.Public().(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("an RSA key of %d bits is too small (at least 2048)", k.N.BitLen())
		}
		return nil
	case *ecdsa.PublicKey:
		return nil
	}
	return fmt.Errorf("a key of type %T cannot sign service account tokens (use RSA or ECDSA)", key.Public())
}
