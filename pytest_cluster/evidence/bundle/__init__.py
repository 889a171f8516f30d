"""A run's evidence as a bundle another party can check: the manifest (an in-toto
Statement whose subjects are the run's files, in a DSSE envelope, signed when a key is
given), and `pytest-cluster verify`.

- dsse.py: the envelope (DSSE v1) and its pre-authentication encoding;
- keys.py: signing with an Ed25519 key file (`cryptography`) or an OpenSSH key
  (`ssh-keygen -Y sign`), and checking either against a public key;
- manifest.py: the Statement of a run directory, written at the end of a run;
- verify.py: a run directory checked against its manifest, which the other side may
  have made: tree.py reads the directory without following any link, bounds.py parses
  its JSON with bounded depth and echoes its values cut short and printable.

It imports nothing of pytest or of the rest of the package but errors: `verify` runs
where only the evidence is.
"""
