// PATCH /notes/{id} of examples/notes-api, written the Powertools way: the
// same UpdateItem (key user_id + id, condition `version = :seen`, SET of the
// fields sent and the next version, ALL_OLD on a failed condition), made
// idempotent by @aws-lambda-powertools/idempotency's makeIdempotent with
// its DynamoDB persistence layer. Powertools keeps its record apart from
// the handler's write: a PutItem of an INPROGRESS record, the handler's
// UpdateItem, an UpdateItem completing the record.
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DynamoDBClient,
  UpdateItemCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';

// The notes table's attributes (examples/notes-api/notes/table.go).
const UserAttr = 'user_id';
const IDAttr = 'id';
const TitleAttr = 'title';
const BodyAttr = 'body';
const VersionAttr = 'version';

// The notes API's limits (notes/note.go), checked before any DynamoDB call
// as the Go service checks them.
const MaxTitleChars = 200;
const MaxBodyBytes = 32 << 10;
const MaxVersion = 2 ** 53 - 2;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A DynamoDB client for DYNAMODB_ENDPOINT: local, fixed credentials. */
export function localClient(endpoint = process.env.DYNAMODB_ENDPOINT) {
  if (!endpoint) throw new Error('DYNAMODB_ENDPOINT is required');
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/**
 * The two tables the handler needs: the notes table (user_id, id) and
 * Powertools' default idempotency table (partition key `id`, TTL on
 * `expiration`).
 */
export async function createTables(client, { notesTable, idempotencyTable }) {
  const wait = (name) => waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: name });
  await client.send(new CreateTableCommand({
    TableName: notesTable,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: [{ AttributeName: UserAttr, KeyType: 'HASH' }, { AttributeName: IDAttr, KeyType: 'RANGE' }],
    AttributeDefinitions: [{ AttributeName: UserAttr, AttributeType: 'S' }, { AttributeName: IDAttr, AttributeType: 'S' }],
  }));
  await client.send(new CreateTableCommand({
    TableName: idempotencyTable,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
  }));
  await wait(notesTable);
  await wait(idempotencyTable);
  await client.send(new UpdateTimeToLiveCommand({
    TableName: idempotencyTable,
    TimeToLiveSpecification: { AttributeName: 'expiration', Enabled: true },
  }));
}

/** An answer as the HTTP API takes it from Lambda (payload 2.0). */
function answer(statusCode, value, headers = {}) {
  return {
    statusCode,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(value),
  };
}

function refusal(statusCode, error, message) {
  return answer(statusCode, { error, message });
}

/** A business refusal: thrown from the idempotent part, so that Powertools
 * deletes its record and the same key with a corrected body runs afresh,
 * as the Go service records nothing for a failed condition. */
class NoteRefused extends Error {
  constructor(statusCode, code, message) {
    super(message);
    this.name = 'NoteRefused';
    this.response = refusal(statusCode, code, message);
  }
}

/** The PATCH body's checks (notes/patch.go's checkPatch), or null. */
function checkPatch(event) {
  if (!UUID.test(event.pathParameters?.id ?? '')) return 'The note id in the path must be a UUID';
  const key = event.headers?.['idempotency-key'];
  if (!key) return 'Idempotency-Key header is required';
  if (!UUID.test(key.replace(/^"|"$/g, ''))) return 'Idempotency-Key must be a UUID';
  let in_;
  try {
    in_ = JSON.parse(event.body ?? '');
  } catch {
    return 'Request body is not a valid note';
  }
  if (typeof in_ !== 'object' || in_ === null || Array.isArray(in_)) return 'Request body is not a valid note';
  for (const k of Object.keys(in_)) if (!['version', 'title', 'body'].includes(k)) return 'Request body is not a valid note';
  const { version, title, body } = in_;
  if (!Number.isInteger(version) || version < 1 || version > MaxVersion) return 'version is required: the note\'s version, 1 or more, as last read';
  if (title === undefined && body === undefined) return 'a PATCH changes the title, the body or both';
  if (title !== undefined && (typeof title !== 'string' || title.trim() === '' || [...title].length > MaxTitleChars)) return 'title must be 1 to 200 characters, not all blank';
  if (body !== undefined && (typeof body !== 'string' || Buffer.byteLength(body) > MaxBodyBytes)) return 'body must be at most 32768 bytes';
  return null;
}

/**
 * The PATCH handler, built once per execution environment as Lambda would.
 * useLocalCache is Powertools' in-memory cache of records (off by default):
 * with it a warm replay needs no DynamoDB call, as the Go service's replay
 * cache does. remainingMillis stands in for the Lambda context's remaining
 * time when the caller passes no context: Powertools sets the INPROGRESS
 * record's expiry from it.
 */
export function createHandler({ client, notesTable, idempotencyTable, useLocalCache = false }) {
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName: idempotencyTable, awsSdkV3Client: client });
  const config = new IdempotencyConfig({
    // The key is the caller's: one user's key never answers another's.
    eventKeyJmesPath: '[requestContext.authorizer.jwt.claims.sub, headers."idempotency-key"]',
    // The same key with another note or body is refused, not replayed.
    payloadValidationJmesPath: '[pathParameters.id, body]',
    throwOnNoIdempotencyKey: true,
    useLocalCache,
    // A stored answer says so, as the Go service's Idempotent-Replayed does.
    responseHook: (response) => ({ ...response, headers: { ...response.headers, 'Idempotent-Replayed': 'true' } }),
  });

  const patchNote = async (event) => {
    const user = event.requestContext.authorizer.jwt.claims.sub;
    const id = event.pathParameters.id.toLowerCase();
    const in_ = JSON.parse(event.body);
    const set = ['#version = :next'];
    const names = { '#id': IDAttr, '#version': VersionAttr };
    const values = { ':seen': { N: String(in_.version) }, ':next': { N: String(in_.version + 1) } };
    if (in_.title !== undefined) {
      set.push('#title = :title');
      names['#title'] = TitleAttr;
      values[':title'] = { S: in_.title };
    }
    if (in_.body !== undefined) {
      set.push('#body = :body');
      names['#body'] = BodyAttr;
      values[':body'] = { S: in_.body };
    }
    try {
      await client.send(new UpdateItemCommand({
        TableName: notesTable,
        Key: { [UserAttr]: { S: user }, [IDAttr]: { S: id } },
        UpdateExpression: `SET ${set.join(', ')}`,
        ConditionExpression: 'attribute_exists(#id) AND #version = :seen',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }));
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        // ALL_OLD is the note as it stood: present means a stale version.
        // (The Go service reads the note when no item comes back; here an
        // absent item is taken as a missing note.)
        if (err.Item) throw new NoteRefused(409, 'NOTE_VERSION_CONFLICT', 'The note has changed since the version sent; nothing was stored');
        throw new NoteRefused(404, 'NOTE_NOT_FOUND', 'No note with this id; nothing was stored');
      }
      throw err;
    }
    // The Go service's answer, member for member: what changed and the new version.
    return answer(200, { id, title: in_.title, body: in_.body, version: in_.version + 1 });
  };
  const idempotentPatch = makeIdempotent(patchNote, { persistenceStore, config });

  return async (event, context) => {
    if (event.routeKey !== 'PATCH /notes/{id}') return refusal(404, 'NOT_FOUND', 'No such route');
    if (!event.requestContext?.authorizer?.jwt?.claims?.sub) return refusal(401, 'UNAUTHORIZED', 'No verified caller');
    const invalid = checkPatch(event);
    if (invalid) return refusal(400, 'VALIDATION_FAILED', invalid);
    try {
      return await idempotentPatch(event, context);
    } catch (err) {
      if (err.name === 'NoteRefused') return err.response;
      if (err.name === 'IdempotencyAlreadyInProgressError') {
        return refusal(409, 'REQUEST_IN_PROGRESS', 'A request with this Idempotency-Key is in progress');
      }
      if (err.name === 'IdempotencyValidationError') {
        return refusal(422, 'IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD', 'This Idempotency-Key was used with another request');
      }
      // IdempotencyPersistenceLayerError and the rest: the client may retry.
      return refusal(503, 'SERVICE_UNAVAILABLE', `${err.name}: ${err.message}`);
    }
  };
}

/** A stand-in for the Lambda context: Powertools reads only the remaining time. */
export function lambdaContext(remainingMillis = 30_000) {
  const deadline = Date.now() + remainingMillis;
  return { getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()) };
}

let defaultHandler;

/** The Lambda entry point, configured from the environment on first use. */
export const handler = async (event, context) => {
  defaultHandler ??= createHandler({
    client: localClient(),
    notesTable: process.env.NOTES_TABLE,
    idempotencyTable: process.env.IDEMPOTENCY_TABLE,
  });
  return defaultHandler(event, context);
};
