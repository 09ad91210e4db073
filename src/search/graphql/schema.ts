// The GraphQL schema of the search API. Its types, fields and arguments are those of ACM search v2
// (stolostron/search-v2-api), so ACM's console and scripts work unchanged; descriptions are our own.
import { buildSchema, type GraphQLSchema } from 'graphql';

export const searchSdl = /* GraphQL */ `
schema {
  query: Query
  subscription: Subscription
}

type Query {
  "Objects matching each input, with their count and related objects; only what the caller may list."
  search(input: [SearchInput]): [SearchResult]
  "Distinct values of a property among the objects the query matches (default limit 1,000; -1: server maximum)."
  searchComplete(property: String!, query: SearchInput, limit: Int): [String]
  "Property names of the objects the query matches."
  searchSchema(query: SearchInput): Map
  "Conditions the service wants the caller to know about (not errors)."
  messages: [Message]
}

type Subscription {
  "Changes in the index that match the input, filtered by the caller's permissions."
  watch(input: SearchInput): Event
}

input SearchFilter {
  "Property name, e.g. kind, namespace, name, label, status."
  property: String!
  "Values, OR-ed. Each may start with = ! != > >= < <=; * is a wildcard; dates take hour, day, week, month, year."
  values: [String]!
}

input SearchInput {
  "Words that must each appear in some property value (case-insensitive)."
  keywords: [String]
  "Filters, AND-ed."
  filters: [SearchFilter]
  "Most items to return (default 1,000; -1: the server's maximum)."
  limit: Int
  "Items to skip, for paging."
  offset: Int
  "\\"property asc\\" or \\"property desc\\"."
  orderBy: String
  "Only these kinds in related results."
  relatedKinds: [String]
}

type SearchResult {
  count: Int
  items: [Map]
  related: [SearchRelatedResult]
}

type SearchRelatedResult {
  kind: String!
  count: Int
  items: [Map]
}

type Event {
  uid: ID!
  "INSERT, UPDATE or DELETE."
  operation: String!
  newData: Map
  oldData: Map
  timestamp: Date!
}

type Message {
  id: String!
  "information, warning or error."
  kind: String
  description: String
}

"A JSON object of properties."
scalar Map

"RFC 3339 date and time."
scalar Date
`;

export function searchSchema(): GraphQLSchema {
  return buildSchema(searchSdl);
}
