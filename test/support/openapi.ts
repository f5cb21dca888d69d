import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * OpenAPI 3.1 checked without a validator package: the document's structure against a JSON Schema written
 * here from the specification (https://spec.openapis.org/oas/v3.1.0, the fields this service can use, no
 * others allowed), and every Schema Object in it compiled by Ajv as JSON Schema 2020-12, the dialect 3.1
 * uses, in strict mode (an unknown keyword is an error).
 */

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description?: string };
  servers?: { url: string }[];
  tags?: { name: string }[];
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, object>; securitySchemes?: Record<string, object> };
}

export interface Operation {
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; required?: boolean; schema?: object; example?: unknown }[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { description: string; content?: Record<string, MediaType> }>;
}

export interface MediaType {
  schema?: object;
  example?: unknown;
}

export const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const extensions = { '^x-': true } as const;
/** A JSON Schema: an object, or `true` for anything. */
type JsonSchema = object | boolean;

/** An object with these properties, extensions (`x-…`) and nothing else. */
const fixed = (properties: Record<string, JsonSchema>, required: string[] = []) => ({
  type: 'object',
  properties,
  patternProperties: extensions,
  additionalProperties: false,
  required,
});
const string = { type: 'string' } as const;
const boolean = { type: 'boolean' } as const;
const ref = (name: string) => ({ $ref: `#/$defs/${name}` });
const mapOf = (schema: JsonSchema) => ({ type: 'object', additionalProperties: schema });
const orReference = (name: string) => ({ oneOf: [ref('reference'), ref(name)] });
/** Schema Objects are checked on their own, by compiling them (see schemaCompiler). */
const schemaObject = { type: ['object', 'boolean'] };
const exampleFields = { example: true, examples: mapOf(true) };

export const OPENAPI_31_STRUCTURE = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  ...fixed(
    {
      openapi: { type: 'string', pattern: '^3\\.1\\.\\d+(-.+)?$' },
      info: ref('info'),
      jsonSchemaDialect: string,
      servers: { type: 'array', items: ref('server') },
      paths: ref('paths'),
      webhooks: mapOf(true),
      components: ref('components'),
      security: { type: 'array', items: ref('securityRequirement') },
      tags: { type: 'array', items: ref('tag') },
      externalDocs: ref('externalDocs'),
    },
    ['openapi', 'info'],
  ),
  anyOf: [{ required: ['paths'] }, { required: ['components'] }, { required: ['webhooks'] }],
  $defs: {
    info: fixed(
      {
        title: string,
        summary: string,
        description: string,
        termsOfService: string,
        contact: fixed({ name: string, url: string, email: string }),
        license: {
          ...fixed({ name: string, identifier: string, url: string }, ['name']),
          not: { required: ['identifier', 'url'] },
        },
        version: string,
      },
      ['title', 'version'],
    ),
    server: fixed({ url: string, description: string, variables: mapOf(true) }, ['url']),
    paths: {
      type: 'object',
      patternProperties: { '^/': ref('pathItem'), ...extensions },
      additionalProperties: false,
    },
    pathItem: fixed({
      $ref: string,
      summary: string,
      description: string,
      servers: { type: 'array', items: ref('server') },
      parameters: { type: 'array', items: orReference('parameter') },
      ...Object.fromEntries(OPERATION_METHODS.map((method) => [method, ref('operation')])),
    }),
    operation: fixed(
      {
        tags: { type: 'array', items: string },
        summary: string,
        description: string,
        externalDocs: ref('externalDocs'),
        operationId: string,
        parameters: { type: 'array', items: orReference('parameter') },
        requestBody: orReference('requestBody'),
        responses: ref('responses'),
        callbacks: mapOf(true),
        deprecated: boolean,
        security: { type: 'array', items: ref('securityRequirement') },
        servers: { type: 'array', items: ref('server') },
      },
      ['responses'],
    ),
    parameter: {
      ...fixed(
        {
          name: string,
          in: { enum: ['query', 'header', 'path', 'cookie'] },
          description: string,
          required: boolean,
          deprecated: boolean,
          allowEmptyValue: boolean,
          style: string,
          explode: boolean,
          allowReserved: boolean,
          schema: schemaObject,
          content: { ...mapOf(ref('mediaType')), minProperties: 1, maxProperties: 1 },
          ...exampleFields,
        },
        ['name', 'in'],
      ),
      oneOf: [{ required: ['schema'] }, { required: ['content'] }],
      // "If the parameter location is "path", this property is REQUIRED and its value MUST be true."
      if: { properties: { in: { const: 'path' } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a thenable
      then: { properties: { required: { const: true } }, required: ['required'] },
    },
    requestBody: fixed({ description: string, content: ref('content'), required: boolean }, ['content']),
    content: mapOf(ref('mediaType')),
    mediaType: fixed({ schema: schemaObject, encoding: mapOf(true), ...exampleFields }),
    responses: {
      type: 'object',
      propertyNames: { pattern: '^([1-5](?:[0-9]{2}|XX)|default|x-.*)$' },
      minProperties: 1,
      additionalProperties: orReference('response'),
    },
    response: fixed(
      {
        description: string,
        headers: mapOf(orReference('header')),
        content: ref('content'),
        links: mapOf(true),
      },
      ['description'],
    ),
    header: fixed({
      description: string,
      required: boolean,
      deprecated: boolean,
      style: string,
      explode: boolean,
      schema: schemaObject,
      content: ref('content'),
      ...exampleFields,
    }),
    components: fixed({
      schemas: mapOf(schemaObject),
      responses: mapOf(true),
      parameters: mapOf(true),
      examples: mapOf(true),
      requestBodies: mapOf(true),
      headers: mapOf(true),
      securitySchemes: mapOf(orReference('securityScheme')),
      links: mapOf(true),
      callbacks: mapOf(true),
      pathItems: mapOf(true),
    }),
    securityScheme: {
      ...fixed(
        {
          type: { enum: ['apiKey', 'http', 'mutualTLS', 'oauth2', 'openIdConnect'] },
          description: string,
          name: string,
          in: { enum: ['query', 'header', 'cookie'] },
          scheme: string,
          bearerFormat: string,
          flows: true,
          openIdConnectUrl: string,
        },
        ['type'],
      ),
      allOf: [
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a thenable
        { if: { properties: { type: { const: 'apiKey' } } }, then: { required: ['name', 'in'] } },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a thenable
        { if: { properties: { type: { const: 'http' } } }, then: { required: ['scheme'] } },
      ],
    },
    securityRequirement: mapOf({ type: 'array', items: string }),
    tag: fixed({ name: string, description: string, externalDocs: ref('externalDocs') }, ['name']),
    externalDocs: fixed({ description: string, url: string }, ['url']),
    reference: fixed({ $ref: string, summary: string, description: string }, ['$ref']),
  },
} as const;

/** Where the document's component schemas live for Ajv: refs into the document are rewritten to it. */
const COMPONENTS_ID = 'https://presently.test/components.json';

/**
 * Compiles Schema Objects of `document` with Ajv (2020-12, strict), `#/components/schemas/…` references
 * resolved. OpenAPI adds `example`, `discriminator`, `xml` and `externalDocs` to JSON Schema's keywords.
 */
export function schemaCompiler(document: OpenApiDocument): (schema: object) => ValidateFunction {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allowUnionTypes: true, allErrors: true });
  for (const keyword of ['example', 'discriminator', 'xml', 'externalDocs']) ajv.addKeyword(keyword);
  const rewrite = (schema: object): object =>
    JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${COMPONENTS_ID}#/$defs/`));
  ajv.addSchema({ $id: COMPONENTS_ID, $defs: rewrite(document.components?.schemas ?? {}) });
  return (schema) => ajv.compile(rewrite(schema));
}

/** Every `$ref` in `value`, with where it was found. */
export function referencesIn(value: unknown, at = '#'): { at: string; ref: string }[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    key === '$ref' && typeof inner === 'string' ? [{ at, ref: inner }] : referencesIn(inner, `${at}/${key}`),
  );
}

/** The value a local JSON pointer (`#/a/b`) names in `document`, or undefined. */
export function resolvePointer(document: unknown, pointer: string): unknown {
  if (!pointer.startsWith('#/')) return undefined;
  return pointer
    .slice(2)
    .split('/')
    .map((part) => decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>(
      (node, part) =>
        typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[part] : undefined,
      document,
    );
}

/** Every operation of the document as `METHOD /path`, with the operation. */
export function operationsOf(document: OpenApiDocument): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    OPERATION_METHODS.filter((method) => item[method]).map(
      (method) => [`${method.toUpperCase()} ${path}`, item[method] as Operation] as [string, Operation],
    ),
  );
}
