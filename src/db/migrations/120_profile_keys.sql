-- A key's type is any key type a profile names (docs/profiles.md, `key.types`: `consumer` of a rest
-- profile), not only the workspace API's three: the name's own pattern replaces the list. The workspace
-- API's binding rules stay where they are: a workspace key has its workspace and role, a personal key its user.
ALTER TABLE api_keys DROP CONSTRAINT IF EXISTS api_keys_type_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_type_name CHECK (type ~ '^[a-z][a-z0-9_]{0,31}$');
