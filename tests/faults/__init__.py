"""The fault suite: every row of issue 13 against a misbehaving server, hostile state files and inputs."""
