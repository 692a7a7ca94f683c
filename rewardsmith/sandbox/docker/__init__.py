"""The Docker worker image: built without a registry (`image.py`) or from the `Dockerfile`."""
