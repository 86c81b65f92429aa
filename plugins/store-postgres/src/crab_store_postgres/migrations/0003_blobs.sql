-- Image bytes, once per distinct image, named by sha256 (crab.BlobStore); rows are never updated.
CREATE TABLE blobs (
    sha256 text PRIMARY KEY,
    data bytea NOT NULL
);
