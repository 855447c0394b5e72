package join

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"errors"
)

// sealSaltSize and sealIterations shape the key Seal derives from the
// token's secret (PBKDF2-SHA256).
const (
	sealSaltSize   = 16
	sealIterations = 200_000
)

// Seal encrypts plain with AES-256-GCM under a key derived from secret
// with a random salt: salt | nonce | ciphertext.
func Seal(secret string, plain []byte) ([]byte, error) {
	salt := make([]byte, sealSaltSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	aead, err := sealCipher(secret, salt)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append(salt, nonce...)
	return aead.Seal(out, nonce, plain, nil), nil
}

// Open reverses Seal; a wrong secret or altered data is an error.
func Open(secret string, sealed []byte) ([]byte, error) {
	if len(sealed) < sealSaltSize {
		return nil, errors.New("sealed data is too short")
	}
	aead, err := sealCipher(secret, sealed[:sealSaltSize])
	if err != nil {
		return nil, err
	}
	rest := sealed[sealSaltSize:]
	if len(rest) < aead.NonceSize() {
		return nil, errors.New("sealed data is too short")
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], nil)
	if err != nil {
		return nil, errors.New("wrong token or altered data")
	}
	return plain, nil
}

func sealCipher(secret string, salt []byte) (cipher.AEAD, error) {
	key, err := pbkdf2.Key(sha256.New, secret, salt, sealIterations, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
