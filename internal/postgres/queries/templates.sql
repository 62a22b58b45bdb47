-- Templates' announced status and category.

-- name: AnnouncedTemplate :one
SELECT status, category FROM template_announcements WHERE project = @project AND template_uid = @template_uid;

-- name: AnnounceTemplate :one
-- Records a template's status and category; true when they differ from the last recorded (or
-- are the first): the caller writes the event only then, in the same transaction.
WITH upsert AS (
    INSERT INTO template_announcements (project, template_uid, status, category, changed_at)
    VALUES (@project, @template_uid, @status, @category, @changed_at)
    ON CONFLICT (project, template_uid) DO UPDATE SET status = excluded.status, category = excluded.category,
        changed_at = excluded.changed_at
    WHERE (template_announcements.status, template_announcements.category) <> (excluded.status, excluded.category)
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM upsert)::boolean AS changed;

-- name: ForgetTemplateAnnouncement :exec
DELETE FROM template_announcements WHERE project = @project AND template_uid = @template_uid;
