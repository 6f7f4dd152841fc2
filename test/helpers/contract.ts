/** The page message's fields (docs/contract.md "Pages"), shared by the unit and e2e tests that check the shape. */
export const CONTRACT_PAGE_FIELDS = [
  'appid',
  'crawlid',
  'spiderid',
  'url',
  'response_url',
  'status_code',
  'status_msg',
  'response_headers',
  'request_headers',
  'body',
  'encoding',
  'links',
  'attrs',
  'success',
  'timestamp',
] as const;

/** Our Ext fields on every page message. */
export const EXT_PAGE_FIELDS = ['depth', 'fetched_ms', 'retry_times'] as const;
