"""aforo's durable state: checkpoints, sessions and telemetry under the state directory.

Import the modules directly (`aforo.store.checkpoints`, `.sessions`, `.telemetry`, `.redact`): this
package imports nothing on its own, so using one store never pays for the others.
"""
