package bootstrap

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestCertificateKeyEncryption(t *testing.T) {
	k, err := NewCertificateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := hex.DecodeString(k)
	if len(key) != 32 {
		t.Fatalf("key of %d bytes, want 32 (AES-256)", len(key))
	}
	plain := []byte("-----BEGIN RSA PRIVATE KEY-----\nnot really\n")
	sealed, err := Encrypt(plain, key)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, plain) {
		t.Fatal("ciphertext contains the plaintext")
	}
	again, _ := Encrypt(plain, key)
	if bytes.Equal(sealed, again) {
		t.Error("two encryptions are equal: the nonce is not random")
	}
	got, err := Decrypt(sealed, key)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("decrypt: %v %q", err, got)
	}
	other, _ := NewCertificateKey()
	okey, _ := hex.DecodeString(other)
	if _, err := Decrypt(sealed, okey); err == nil {
		t.Error("another key decrypted the data")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := Decrypt(sealed, key); err == nil {
		t.Error("tampered data decrypted")
	}
}
